import XCTest
final class PlaceholderTests_SluiceStackTests: XCTestCase { func testNothing() {} }
