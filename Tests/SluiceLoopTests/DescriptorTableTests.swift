@testable import SluiceLoop
import XCTest

/// `DescriptorTable`: the loop's handlers by descriptor.
final class DescriptorTableTests: XCTestCase {
    func testStoresReplacesAndForgetsByDescriptor() {
        var table = DescriptorTable<String>()
        XCTAssertNil(table[3])
        table[3] = "carrier"
        table[700] = "association"
        XCTAssertEqual(table[3], "carrier")
        XCTAssertEqual(table[700], "association")
        XCTAssertNil(table[4], "a descriptor between two stored ones has no value")
        table[3] = "reused"
        XCTAssertEqual(table[3], "reused", "a descriptor the kernel hands out again takes the new handler")
        table[700] = nil
        XCTAssertNil(table[700])
        XCTAssertEqual(table[3], "reused")
    }

    func testNegativeAndUnseenDescriptorsHaveNoValue() {
        var table = DescriptorTable<Int>()
        table[-1] = 1
        XCTAssertNil(table[-1], "a negative descriptor is never stored")
        table[100_000] = nil
        XCTAssertNil(table[100_000])
        table[0] = 5
        XCTAssertEqual(table[0], 5)
        XCTAssertNil(table[Int32.max])
    }
}
