/// Bytes from hex text, for byte fixtures; spaces and newlines are ignored: "05 01 00".
public func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }.map { UInt8(String($0), radix: 16)! }
    precondition(digits.count % 2 == 0, "odd number of hex digits in \(text)")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}
