import XCTest
final class PlaceholderTests_SluiceConfigTests: XCTestCase { func testNothing() {} }
