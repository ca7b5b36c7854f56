import XCTest
final class PlaceholderTests_SluiceMuxTests: XCTestCase { func testNothing() {} }
