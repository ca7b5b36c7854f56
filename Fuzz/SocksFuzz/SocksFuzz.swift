// libFuzzer entry point for the SluiceSocks decoders, against SluiceSocks and SluiceWire built with
// -enable-testing (see Fuzz/README.md).
//
// Beyond "never traps": whatever decodes re-encodes to the very bytes it came from (every SOCKS5
// message has one encoding, but for a reply's reserved byte, which is not checked), a decoder that says "need more" says so for every shorter prefix too,
// and the client and server handshakes fed the input in two pieces end exactly as fed in one.
@testable import SluiceSocks
import SluiceWire

@_cdecl("LLVMFuzzerTestOneInput")
public func socksFuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    roundTrip(bytes, SocksGreeting.decode) { try $0.encoded() }
    roundTrip(bytes, SocksMethodSelection.decode) { $0.encoded }
    roundTrip(bytes, SocksPasswordRequest.decode) { try $0.encoded() }
    roundTrip(bytes, SocksPasswordReply.decode) { $0.encoded }
    roundTrip(bytes, SocksRequest.decode) { try $0.encoded() }
    roundTrip(bytes, SocksReply.decode, unchecked: 2) { try $0.encoded() }  // RSV: not checked on decode, 0 on encode
    if let header = try? SocksUDPHeader.decode(datagram: bytes) {
        precondition(header.length <= size, "the UDP header claims more than the datagram")
        precondition((try? header.value.encoded())?.elementsEqual(bytes.prefix(header.length)) == true, "UDP header changed")
    }
    handshakes(bytes)
    return 0
}

/// Decodes `bytes`; what decodes must encode to the same bytes, and no prefix of those may decode.
private func roundTrip<T>(_ bytes: UnsafeRawBufferPointer, _ decode: (UnsafeRawBufferPointer) throws(SocksError) -> Decoded<T>?,
                          unchecked: Int? = nil, _ encode: (T) throws -> [UInt8]) {
    guard let decoded = try? decode(bytes) else { return }
    precondition(decoded.length <= bytes.count, "decoded past the end")
    let own = UnsafeRawBufferPointer(rebasing: bytes[0..<decoded.length])
    guard let encoded = try? encode(decoded.value) else { preconditionFailure("a decoded message does not encode") }
    var expected = Array(own)
    if let unchecked, unchecked < expected.count { expected[unchecked] = encoded[unchecked] }
    precondition(encoded == expected, "re-encoding changed the bytes")
    for cut in [0, decoded.length / 2, decoded.length - 1] where cut >= 0 && cut < decoded.length {
        let prefix = UnsafeRawBufferPointer(rebasing: bytes[0..<cut])
        precondition((try? decode(prefix)) ?? nil == nil, "a prefix decoded")
    }
}

/// Both state machines, fed the input whole and then in two pieces (cut where its first byte says):
/// the same steps must come out, since a machine may only wait for bytes, never act on a cut.
private func handshakes(_ bytes: UnsafeRawBufferPointer) {
    guard let first = bytes.first else { return }
    let cut = Int(first) % (bytes.count + 1)
    let credentials = SocksCredentials(username: Array("u".utf8), password: Array("p".utf8))
    let request = SocksRequest(command: .connect, address: SocksAddress(host: .ip(.v4(0x0A14_0002)), port: 80))
    func client(_ ends: [Int]) -> [String] {
        var machine = SocksClientHandshake(request: request, credentials: first & 1 == 0 ? credentials : nil)
        _ = machine.start()
        return drive(bytes, ends) { try machine.receive($0) }
    }
    func server(_ ends: [Int]) -> [String] {
        var machine = SocksServerHandshake(authenticate: first & 2 == 0 ? nil : { $0 == $1 })
        return drive(bytes, ends) { try machine.receive($0) }
    }
    precondition(client([bytes.count]) == client([cut, bytes.count]), "client steps depend on where the bytes were cut")
    precondition(server([bytes.count]) == server([cut, bytes.count]), "server steps depend on where the bytes were cut")
}

/// Makes `bytes[..<end]` available for each end in turn and feeds the machine until it waits; the
/// steps it took, as text ("error" for a thrown failure).
private func drive<S>(_ bytes: UnsafeRawBufferPointer, _ ends: [Int],
                      _ receive: (UnsafeRawBufferPointer) throws -> (consumed: Int, step: S)) -> [String] {
    var steps: [String] = []
    var done = 0
    for end in ends {
        while true {
            guard let (consumed, step) = try? receive(UnsafeRawBufferPointer(rebasing: bytes[done..<end])) else {
                return steps + ["error"]
            }
            precondition(consumed <= end - done, "consumed more than it was given")
            let text = "\(step)"
            if text == "wait" { break }
            steps.append(text)
            done += consumed
            if text.hasPrefix("done") || text.hasPrefix("request") || text.hasPrefix("sendAndClose") { return steps }
        }
    }
    return steps
}
