import XCTest
final class PlaceholderTests_SluiceHostTests: XCTestCase { func testNothing() {} }
