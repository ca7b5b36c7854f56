// libFuzzer entry point for the PROXY protocol decoder. Compiled with
// Sources/SluiceProxyProtocol/*.swift against a SluiceWire module built first (see Fuzz/README.md).
//
// Beyond "never traps": a header decodes within the input; it encodes to bytes that decode to the
// same header, taking exactly those bytes (the input itself may differ: TLVs, the rest of an UNKNOWN
// line, IPv6 text written another way); and no proper prefix of the bytes it took is an error or a
// header — a relay reading the header in pieces must wait, never refuse, until it is whole.
import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func proxyHeaderFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    guard let decoded = try? ProxyHeader.decode(bytes) else { return 0 }
    precondition(decoded.length <= size, "decoded past the end")
    precondition(decoded.length <= ProxyHeader.maximumLength, "a header over the limit")
    let encoded = decoded.header.encoded()
    let again = encoded.withUnsafeBytes { try? ProxyHeader.decode($0) }
    precondition(again?.header == decoded.header, "the header changed through encode and decode")
    precondition(again?.length == encoded.count, "the encoded header's length")
    for cut in [0, 1, 12, 13, 15, decoded.length / 2, decoded.length - 2, decoded.length - 1] where cut >= 0 && cut < decoded.length {
        let prefix = UnsafeRawBufferPointer(rebasing: bytes[0..<cut])
        let result = Result { () throws(ProxyHeaderError) in try ProxyHeader.decode(prefix) }
        guard case .success(nil) = result else { preconditionFailure("a prefix of \(cut) bytes did not wait for more: \(result)") }
    }
    return 0
}
