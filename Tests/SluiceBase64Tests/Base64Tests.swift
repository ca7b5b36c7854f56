import SluiceBase64
import XCTest

/// RFC 4648 §10 test vectors, and the reasons given for bad input.
final class Base64Tests: XCTestCase {
    func testRFC4648Vectors() throws {
        let vectors = [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="),
                       ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64.encode(Array(plain.utf8)), encoded)
            XCTAssertEqual(try Base64.decode(encoded), Array(plain.utf8))
        }
        let all = [UInt8](0...255)
        XCTAssertEqual(try Base64.decode(Base64.encode(all)), all)
    }

    func testReasons() {
        let cases = [("abc", "its length, 3 characters, is not a multiple of 4"),
                     ("ab!=", "'!' at position 3 is not a base64 character"),
                     ("a=bc", "'=' at position 2 is padding in the middle"),
                     ("a===", "it ends in 3 '=' characters; at most 2 are allowed"),
                     ("Zh==", "its last character carries stray bits, so it is not the canonical form of any key")]
        for (text, reason) in cases {
            XCTAssertThrowsError(try Base64.decode(text)) { error in
                XCTAssertEqual((error as? Base64.Failure)?.reason, reason, text)
            }
        }
    }
}
