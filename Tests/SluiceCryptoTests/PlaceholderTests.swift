import XCTest
final class PlaceholderTests_SluiceCryptoTests: XCTestCase { func testNothing() {} }
