import SluiceJSON
import XCTest

/// `JSONValueEncoder` / `JSONValueDecoder`: the shapes Foundation's coders use, exact integers, and
/// errors that name the place.
final class JSONCodableTests: XCTestCase {
    private enum Step: Codable, Equatable {
        case linkUp(interface: String)
        case mtu(interface: String, previous: Int, new: Int)
        case address(Address)
        case firewall
    }

    private struct Address: Codable, Equatable {
        var prefix: String
        var metric: UInt32?
    }

    private struct Record: Codable, Equatable {
        var version: Int
        var inode: UInt64
        var ratio: Double
        var flags: [Bool]
        var steps: [Step]
        var note: String?
    }

    private let record = Record(version: 1, inode: .max, ratio: 0.25, flags: [true, false], steps: [
        .linkUp(interface: "sluice0"), .mtu(interface: "sluice0", previous: 1500, new: 1400),
        .address(Address(prefix: "198.18.0.1/30", metric: nil)), .address(Address(prefix: "fd53::1/126", metric: 7)), .firewall,
    ], note: nil)

    func testEncodesTheShapesFoundationUses() throws {
        let text = JSONWriter.text(try JSONValueEncoder().encode(record), pretty: false)
        XCTAssertEqual(text, #"{"flags":[true,false],"inode":18446744073709551615,"ratio":0.25,"steps":["#
            + #"{"linkUp":{"interface":"sluice0"}},{"mtu":{"interface":"sluice0","new":1400,"previous":1500}},"#
            + #"{"address":{"_0":{"prefix":"198.18.0.1\/30"}}},{"address":{"_0":{"metric":7,"prefix":"fd53::1\/126"}}},"#
            .replacingOccurrences(of: "\\/", with: "/") + #"{"firewall":{}}],"version":1}"#)
    }

    func testRoundTrip() throws {
        let value = try JSONValueEncoder().encode(record)
        let reparsed = try JSONParser.parse(JSONWriter.write(value))
        XCTAssertEqual(try JSONValueDecoder().decode(Record.self, from: reparsed), record)
    }

    func testNonFiniteDoubleIsAnEncodingError() {
        var bad = record
        bad.ratio = .infinity
        XCTAssertThrowsError(try JSONValueEncoder().encode(bad)) { error in
            guard case EncodingError.invalidValue = error else { return XCTFail("\(error)") }
        }
    }

    func testDecodingErrorsNameThePlace() throws {
        let good = try JSONValueEncoder().encode(record)
        guard case .object(var members) = good, case .array(var steps) = members["steps"] else { return XCTFail() }
        func failure(_ value: JSONValue) -> String {
            do {
                _ = try JSONValueDecoder().decode(Record.self, from: value)
                return "no error"
            } catch {
                return JSONValueDecoder.describe(error)
            }
        }
        XCTAssertEqual(failure(.array([])), "expected an object, got an array")

        var missing = members
        missing["version"] = nil
        XCTAssertEqual(failure(.object(missing)), "key \"version\" is missing")

        members["inode"] = .number(JSONNumber(-1))
        XCTAssertEqual(failure(.object(members)), "inode: -1 is not a whole number from 0 to 18446744073709551615")
        members["inode"] = .number(JSONNumber(5))

        steps[1] = .object(["mtu": .object(["interface": .string("s"), "previous": .string("1500"), "new": .number(JSONNumber(1))])])
        members["steps"] = .array(steps)
        XCTAssertEqual(failure(.object(members)), "steps[1].mtu.previous: expected a whole number, got a string")

        members["flags"] = .array([.null])
        XCTAssertEqual(failure(.object(members)), "flags[0]: expected true or false, got null")
    }

    func testAbsentAndNullOptionalsDecodeAsNil() throws {
        let withNull: JSONValue = .object(["prefix": .string("x"), "metric": .null])
        XCTAssertEqual(try JSONValueDecoder().decode(Address.self, from: withNull), Address(prefix: "x", metric: nil))
        XCTAssertEqual(try JSONValueDecoder().decode(Address.self, from: .object(["prefix": .string("x")])), Address(prefix: "x", metric: nil))
    }
}
