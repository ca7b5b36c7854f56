import SluiceJSON
import XCTest

/// The writer: layout, key order, string escaping, and parse(write(x)) == x.
final class JSONWriterTests: XCTestCase {
    func testPrettyLayoutWithSortedKeys() {
        let value: JSONValue = .object([
            "b": .array([.number(JSONNumber(1)), .null, .bool(false)]),
            "a": .object(["z": .string("x"), "y": .array([]), "x": .object([:])]),
        ])
        XCTAssertEqual(JSONWriter.text(value), """
        {
          "a" : {
            "x" : {},
            "y" : [],
            "z" : "x"
          },
          "b" : [
            1,
            null,
            false
          ]
        }
        """)
        XCTAssertEqual(JSONWriter.text(value, pretty: false), #"{"a":{"x":{},"y":[],"z":"x"},"b":[1,null,false]}"#)
    }

    func testStringEscaping() {
        let cases: [(String, String)] = [
            ("plain", #""plain""#),
            ("quote \" backslash \\ slash /", #""quote \" backslash \\ slash /""#),
            ("\u{8}\u{C}\n\r\t", #""\b\f\n\r\t""#),
            ("\u{0}\u{1}\u{1F}", #""\u0000\u0001\u001F""#),
            ("\u{7F}é€😀\u{2028}", "\"\u{7F}é€😀\u{2028}\""),  // non-ASCII stays UTF-8
        ]
        for (text, json) in cases {
            XCTAssertEqual(JSONWriter.text(.string(text)), json)
            XCTAssertEqual(try JSONParser.parse(json), .string(text), "reads back")
        }
    }

    func testNumbersAreWrittenAsKept() {
        XCTAssertEqual(JSONWriter.text(.number(JSONNumber(UInt64.max))), "18446744073709551615")
        XCTAssertEqual(JSONWriter.text(.number(JSONNumber(Int64.min))), "-9223372036854775808")
        XCTAssertEqual(JSONWriter.text(.number(JSONNumber(2.5)!)), "2.5")
        XCTAssertEqual(JSONWriter.text(.number(JSONNumber(1e-5)!)), "1e-05")
        XCTAssertEqual(JSONWriter.text(.number(JSONNumber("1e400")!)), "1e400")
    }

    func testRoundTrip() throws {
        let value: JSONValue = .object([
            "keys with \"quotes\" and \n": .array([.string("é\u{0}"), .number(JSONNumber("-0.5e-7")!), .bool(true), .null]),
            "": .object(["nested": .array([.array([.array([])])])]),
            "😀": .number(JSONNumber(UInt64.max)),
        ])
        for pretty in [true, false] {
            XCTAssertEqual(try JSONParser.parse(JSONWriter.write(value, pretty: pretty)), value)
        }
    }
}
