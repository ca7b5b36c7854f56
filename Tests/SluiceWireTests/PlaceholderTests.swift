import XCTest
final class PlaceholderTests_SluiceWireTests: XCTestCase { func testNothing() {} }
