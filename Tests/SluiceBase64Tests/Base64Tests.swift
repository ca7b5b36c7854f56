import Foundation
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
        assertReasons(cases)
    }
}

/// The libsodium-backed codec against Foundation's, and the reasons for text that is not ASCII.
final class Base64CrossCheckTests: XCTestCase {
    func testAgreesWithFoundationOnEveryLength() throws {
        var generator = SystemRandomNumberGenerator()
        for count in 0...100 {
            let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString()
            XCTAssertEqual(Base64.encode(bytes), text, "\(count) bytes")
            XCTAssertEqual(try Base64.decode(text), bytes, "\(count) bytes")
        }
    }

    func testNonASCIICharactersAreNamedByPosition() {
        let cases = [("Zm9v\u{00E9}mF", "its length, 7 characters, is not a multiple of 4"),
                     ("Zm9v\u{00E9}mFy", "U+E9 at position 5 is not a base64 character"),
                     ("Zm\u{00E9}v", "U+E9 at position 3 is not a base64 character"),
                     ("Z!\u{00E9}v", "'!' at position 2 is not a base64 character"),
                     ("\u{1F600}Zm9", "U+1F600 at position 1 is not a base64 character"),
                     ("Zm9v Zg=", "a space at position 5 is not a base64 character"),
                     ("Zm9vY\u{0000}==", "U+0 at position 6 is not a base64 character")]
        assertReasons(cases)
    }

    /// libsodium 1.0.18 alone decodes any byte from 0x80 up as '/' (sextet 63); these must fail.
    func testEveryNonASCIIByteIsRefused() {
        for byte in UInt8(0x80)...UInt8(0xFF) {
            let bytes: [UInt8] = [byte, 0x41, 0x41, 0x41]
            XCTAssertThrowsError(try bytes.withUnsafeBytes { try Base64.decode($0) }, "byte \(byte)")
        }
    }

    func testWipeZeroesInPlace() {
        var bytes: [UInt8] = [1, 2, 3]
        Secrets.wipe(&bytes)
        XCTAssertEqual(bytes, [0, 0, 0])
    }
}

/// Each text fails to decode with exactly its reason.
func assertReasons(_ cases: [(String, String)], file: StaticString = #filePath, line: UInt = #line) {
    for (text, reason) in cases {
        XCTAssertThrowsError(try Base64.decode(text), file: file, line: line) { error in
            XCTAssertEqual((error as? Base64.Failure)?.reason, reason, text, file: file, line: line)
        }
    }
}
