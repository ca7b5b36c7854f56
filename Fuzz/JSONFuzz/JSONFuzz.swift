// libFuzzer entry point for SluiceJSON: the parser on any bytes, and the writer on whatever parses.
// Built against a SluiceJSON library (see Fuzz/README.md).
//
// Beyond "never traps" (nesting deeper than JSONParser.maxDepth is an error, not a stack overflow):
// what parses, written pretty or compact, parses back to an equal value, and writing that again
// gives the same bytes; an error names a line and a column within the input.
import SluiceJSON

@_cdecl("LLVMFuzzerTestOneInput")
public func jsonFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: data, count: size))
    let value: JSONValue
    do {
        value = try JSONParser.parse(bytes)
    } catch {
        require(error.line >= 1 && error.column >= 1 && !error.description.isEmpty)
        require(error.line <= bytes.count + 1, "line \(error.line) past the input")
        return 0
    }
    for pretty in [true, false] {
        let text = JSONWriter.write(value, pretty: pretty)
        guard let again = try? JSONParser.parse(text) else {
            fatalError("the writer's output does not parse: \(String(decoding: text, as: UTF8.self))")
        }
        require(again == value, "a value changed on the way through the writer")
        require(JSONWriter.write(again, pretty: pretty) == text, "writing is not stable")
    }
    return 0
}

/// `precondition` that also prints its message in an optimised build, so that a crash says what broke.
private func require(_ condition: Bool, _ message: @autoclosure () -> String = "") {
    if !condition { fatalError(message()) }
}
