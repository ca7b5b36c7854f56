/// Bytes from hex text with spaces for readability: "05 01 00".
func hex(_ text: String) -> [UInt8] {
    let digits = text.filter { !$0.isWhitespace }
    precondition(digits.count % 2 == 0, "odd hex \(text)")
    var out: [UInt8] = []
    var i = digits.startIndex
    while i < digits.endIndex {
        let j = digits.index(i, offsetBy: 2)
        out.append(UInt8(digits[i..<j], radix: 16)!)
        i = j
    }
    return out
}
