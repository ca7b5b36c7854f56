import SluiceJSON
import XCTest

/// The parser: fixtures, escapes, numbers, nesting, and the exact error for each kind of bad input.
final class JSONParserTests: XCTestCase {
    private func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(text) }

    func testFixture() throws {
        let text = """
        {
          "relay": "10.10.0.2:7000",
          "address": ["198.18.0.1/30", "fd53::1/126"],
          "mtu": 1400, "handshakeTimeout": 2.5, "routeAll": true, "killSwitch": false, "psk": null,
          "nested": {"empty": {}, "none": [], "deep": [[1], {"a": [true]}]}
        }
        """
        let expected: JSONValue = .object([
            "relay": .string("10.10.0.2:7000"),
            "address": .array([.string("198.18.0.1/30"), .string("fd53::1/126")]),
            "mtu": .number(JSONNumber("1400")!), "handshakeTimeout": .number(JSONNumber("2.5")!),
            "routeAll": .bool(true), "killSwitch": .bool(false), "psk": .null,
            "nested": .object(["empty": .object([:]), "none": .array([]),
                               "deep": .array([.array([.number(JSONNumber(1))]), .object(["a": .array([.bool(true)])])])]),
        ])
        XCTAssertEqual(try parse(text), expected)
    }

    func testScalarsAtTheTopAndWhitespace() throws {
        XCTAssertEqual(try parse(" \t\r\n42 \n"), .number(JSONNumber(42)))
        XCTAssertEqual(try parse("\"x\""), .string("x"))
        XCTAssertEqual(try parse("null"), .null)
        XCTAssertEqual(try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("[]".utf8)), .array([]), "a UTF-8 byte-order mark is skipped")
    }

    func testLastDuplicateKeyWins() throws {
        XCTAssertEqual(try parse(#"{"a": 1, "a": "two"}"#), .object(["a": .string("two")]))
    }

    func testEscapes() throws {
        let cases: [(String, String)] = [
            (#""\" \\ \/ \b \f \n \r \t""#, "\" \\ / \u{8} \u{C} \n \r \t"),
            (#""\u0041\u00e9\u00E9""#, "Aéé"),
            (#""\u0000""#, "\u{0}"),
            (#""\u20AC""#, "€"),
            (#""\uD83D\uDE00""#, "😀"),  // a surrogate pair is one scalar
            ("\"é€😀 raw UTF-8\"", "é€😀 raw UTF-8"),
        ]
        for (json, expected) in cases {
            XCTAssertEqual(try parse(json), .string(expected), json)
        }
    }

    func testNumbers() throws {
        for text in ["0", "-0", "7", "-12", "1.5", "-0.25", "1e3", "1E+3", "2.5e-3", "18446744073709551615",
                     "123456789012345678901234567890", "1e400"] {
            guard case .number(let number) = try parse(text) else { return XCTFail(text) }
            XCTAssertEqual(number.text, text, "the literal is kept as written")
        }
        let huge = try XCTUnwrap(JSONNumber("1e400"))
        XCTAssertNil(huge.double, "outside the double range")
        XCTAssertNil(huge.integer(as: Int64.self))
        XCTAssertEqual(JSONNumber("18446744073709551615")?.integer(as: UInt64.self), .max, "a UInt64 survives exactly")
        XCTAssertNil(JSONNumber("18446744073709551616")?.integer(as: UInt64.self))
        XCTAssertNil(JSONNumber("123456789012345678901234567890")?.integer(as: Int64.self))
        XCTAssertEqual(JSONNumber("3e2")?.integer(as: UInt16.self), 300)
        XCTAssertNil(JSONNumber("300")?.integer(as: UInt8.self))
        XCTAssertNil(JSONNumber("-1")?.integer(as: UInt32.self))
        XCTAssertNil(JSONNumber("2.5")?.integer(as: Int.self))
        XCTAssertEqual(JSONNumber("2.5")?.double, 2.5)
        XCTAssertNil(JSONNumber(Double.nan))
        XCTAssertNil(JSONNumber(Double.infinity))
        XCTAssertNil(JSONNumber("01"))
        XCTAssertNil(JSONNumber("+1"))
    }

    /// Each bad input with the exact message: what was expected, what was found, and where.
    func testErrorsSayWhatWasExpectedAndWhere() {
        let cases: [(String, String)] = [
            ("", "the text ends where a value should be at line 1, column 1"),
            ("{\n  \"mtu\": 1400,\n  \"tun\": sluice0\n}", "expected a value, found the word sluice0 (strings need double quotes; true, false and null are lower case) at line 3, column 10"),
            (#"{"a": 1,}"#, "expected a key in double quotes after ',', found '}' (JSON allows no comma before '}') at line 1, column 9"),
            ("[1, 2,]", "expected a value after ',', found ']' (JSON allows no comma before ']') at line 1, column 7"),
            (#"{"a" 1}"#, "expected ':' after the key \"a\", found '1' at line 1, column 6"),
            (#"{"a": 1 "b": 2}"#, "expected ',' or '}' after the value of \"a\", found '\"' at line 1, column 9"),
            (#"{'a': 1}"#, "expected a key in double quotes or '}', found ''' at line 1, column 2"),
            ("[1 2]", "expected ',' or ']' after element 1 of an array, found '2' at line 1, column 4"),
            ("[1,\n 2", "the text ends inside an array: expected ',' or ']' after element 2 at line 2, column 3"),
            (#"{"a": 1"#, "the text ends inside an object: expected ',' or '}' after the value of \"a\" at line 1, column 8"),
            ("{} x", "expected the end of the text after the value, found 'x' at line 1, column 4"),
            ("True", "expected a value, found the word True (strings need double quotes; true, false and null are lower case) at line 1, column 1"),
            ("NaN", "expected a value, found the word NaN (strings need double quotes; true, false and null are lower case) at line 1, column 1"),
            ("// comment\n{}", "expected a value (a string, number, object, array, true, false or null), found '/' at line 1, column 1"),
            ("[01]", "a number may not start with 0 unless it is 0 (a leading zero), found '1' at line 1, column 3"),
            ("-", "expected a digit after '-', found the end of the text at line 1, column 2"),
            ("1.", "expected a digit after the decimal point, found the end of the text at line 1, column 3"),
            ("1e+", "expected a digit in the exponent, found the end of the text at line 1, column 4"),
            (".5", "expected a value (a string, number, object, array, true, false or null), found '.' at line 1, column 1"),
            ("\"abc", "the string that starts here has no closing '\"' at line 1, column 1"),
            ("\"a\nb\"", "U+000A (a control character) must be escaped in a string, as \\n at line 1, column 3"),
            ("\"a\u{1}b\"", "U+0001 (a control character) must be escaped in a string, as \\u0001 at line 1, column 3"),
            (#""\x""#, "unknown escape \\x in a string (valid are \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX) at line 1, column 2"),
            (#""\u12G4""#, "expected 4 hex digits after \\u, found 'G' at line 1, column 6"),
            (#""\uD83D""#, "\\uD83D is the first half of a surrogate pair, but no second half (\\uDC00-\\uDFFF) follows at line 1, column 2"),
            (#""\uD83D\u0041""#, "\\uD83D is the first half of a surrogate pair, but \\u0041 is not a second half at line 1, column 2"),
            (#""\uDE00""#, "\\uDE00 is the second half of a surrogate pair without a first half at line 1, column 2"),
            ("[\"é\", ?]", "expected a value (a string, number, object, array, true, false or null), found '?' at line 1, column 7"),  // columns count characters
        ]
        for (text, message) in cases {
            XCTAssertThrowsError(try parse(text), text) { error in
                XCTAssertEqual("\(error)", message, text)
            }
        }
    }

    func testInvalidUTF8InAStringNamesTheByte() {
        XCTAssertThrowsError(try JSONParser.parse(Array("\"ab".utf8) + [0xC3, 0x28] + Array("\"".utf8))) { error in
            XCTAssertEqual(error as? JSONError, JSONError(problem: "byte 0xC3 in a string is not valid UTF-8", line: 1, column: 4))
        }
        XCTAssertThrowsError(try JSONParser.parse([0xFF])) { error in
            XCTAssertEqual("\(error)", "expected a value (a string, number, object, array, true, false or null), found a byte 0xFF that is not UTF-8 at line 1, column 1")
        }
    }

    /// Nesting is bounded: 100,000 opening brackets are an error at level 101, not a stack overflow.
    func testDeepNestingIsBounded() throws {
        for opener in ["[", "{\"a\":"] {
            let text = String(repeating: opener, count: 100_000)
            XCTAssertThrowsError(try parse(text)) { error in
                let what = opener == "[" ? "an array" : "an object"
                XCTAssertTrue("\(error)".hasPrefix("\(what) nested deeper than 100 levels of arrays and objects at line 1, column "), "\(error)")
            }
        }
        let deepest = String(repeating: "[", count: JSONParser.maxDepth) + String(repeating: "]", count: JSONParser.maxDepth)
        XCTAssertNoThrow(try parse(deepest), "exactly the limit is fine")
    }
}
