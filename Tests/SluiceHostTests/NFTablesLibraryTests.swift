import XCTest

@testable import SluiceHost

/// libnftables is opened on demand; its seven functions resolve and a context can be made.
final class NFTablesLibraryTests: XCTestCase {
    func testLoadsAndMakesAContext() throws {
        let library = try NFTablesLibrary.shared()
        let context = try XCTUnwrap(library.ctxNew(NFTablesLibrary.defaultFlags))
        XCTAssertEqual(library.bufferOutput(context), 0)
        XCTAssertEqual(library.bufferError(context), 0)
        XCTAssertEqual(library.outputBuffer(context).map { String(cString: $0) }, "", "nothing ran yet")
        library.ctxFree(context)
    }
}
