/// Why text is not JSON (or not the JSON allowed here), and where: the 1-based line and column
/// (columns count characters, not bytes) of the first byte that could not be read.
///
/// Renders as "expected ',' or '}' after the value of \"mtu\", found '\"' at line 3, column 3".
public struct JSONError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What was expected and what was found, as a clause without the position.
    public let problem: String
    public let line: Int
    public let column: Int

    public init(problem: String, line: Int, column: Int) {
        self.problem = problem
        self.line = line
        self.column = column
    }

    /// The error for `problem` at byte `offset` of `bytes`.
    init(_ problem: String, at offset: Int, in bytes: [UInt8]) {
        var line = 1, column = 1
        for byte in bytes[..<min(offset, bytes.count)] {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {  // a UTF-8 continuation byte is part of the previous character
                column += 1
            }
        }
        self.init(problem: problem, line: line, column: column)
    }

    public var description: String { "\(problem) at line \(line), column \(column)" }
}
