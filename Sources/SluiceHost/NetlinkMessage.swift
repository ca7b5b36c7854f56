import CSluiceHostShims

/// One netlink message, built to be sent or parsed from a reply: the `nlmsghdr` fields plus the
/// payload, which is a family header (`ifinfomsg`, `ifaddrmsg`, `rtmsg`, `fib_rule_hdr`...)
/// followed by route attributes (`rtattr`: length, type, value, padded to 4 bytes).
///
/// Integers inside messages are in host byte order (netlink's rule); addresses are network order.
/// All rtnetlink layout knowledge lives here; the operations (`Route`, `PolicyRule`, ...) only
/// say which header and attributes they send.
struct NetlinkMessage {
    var type: UInt16
    var flags: UInt16
    var sequence: UInt32 = 0
    var portID: UInt32 = 0
    var payload: [UInt8]

    /// Size of `struct nlmsghdr` (`NLMSG_HDRLEN`).
    static let headerLength = Int(sluice_nlmsg_hdrlen())

    /// A request whose payload starts with the family header `header` (a plain C struct).
    init<Header: BitwiseCopyable>(type: some BinaryInteger, flags: some BinaryInteger, header: Header) {
        self.type = UInt16(type)
        self.flags = UInt16(flags)
        var header = header
        self.payload = withUnsafeBytes(of: &header) { Array($0) }
        pad()
    }

    private init(type: UInt16, flags: UInt16, sequence: UInt32, portID: UInt32, payload: [UInt8]) {
        self.type = type
        self.flags = flags
        self.sequence = sequence
        self.portID = portID
        self.payload = payload
    }

    // MARK: building

    /// Appends the attribute `type` with `value` as its raw bytes, padded to the attribute alignment.
    mutating func append(_ type: some BinaryInteger, bytes value: [UInt8]) {
        let length = Int(sluice_rta_hdrlen()) + value.count
        withUnsafeBytes(of: UInt16(length)) { payload.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt16(type)) { payload.append(contentsOf: $0) }
        payload.append(contentsOf: value)
        pad()
    }

    /// Appends a `u32` attribute (host byte order).
    mutating func append(_ type: some BinaryInteger, uint32 value: UInt32) {
        append(type, bytes: withUnsafeBytes(of: value) { Array($0) })
    }

    /// Appends a NUL-terminated string attribute, such as `IFLA_IFNAME`.
    mutating func append(_ type: some BinaryInteger, string value: String) {
        append(type, bytes: Array(value.utf8) + [0])
    }

    private mutating func pad() {
        let aligned = Int(sluice_rta_align(UInt32(payload.count)))
        payload.append(contentsOf: repeatElement(0, count: aligned - payload.count))
    }

    /// The wire bytes: `nlmsghdr` (with `nlmsg_len` filled in) followed by the payload.
    func encoded() -> [UInt8] {
        var header = nlmsghdr(
            nlmsg_len: UInt32(Self.headerLength + payload.count), nlmsg_type: type, nlmsg_flags: flags,
            nlmsg_seq: sequence, nlmsg_pid: portID)
        return withUnsafeBytes(of: &header) { Array($0) } + payload
    }

    // MARK: parsing

    /// Splits one received datagram into its messages; `nil` if a length field is impossible.
    static func decode(datagram bytes: [UInt8]) -> [NetlinkMessage]? {
        var messages: [NetlinkMessage] = []
        var offset = 0
        while bytes.count - offset >= headerLength {
            let header = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: nlmsghdr.self) }
            let length = Int(header.nlmsg_len)
            guard length >= headerLength, length <= bytes.count - offset else { return nil }
            messages.append(
                NetlinkMessage(
                    type: header.nlmsg_type, flags: header.nlmsg_flags, sequence: header.nlmsg_seq,
                    portID: header.nlmsg_pid, payload: Array(bytes[(offset + headerLength)..<(offset + length)])))
            offset += Int(sluice_nlmsg_align(UInt32(length)))
        }
        return messages
    }

    /// The family header at the start of the payload, or `nil` if the payload is too short.
    func familyHeader<Header: BitwiseCopyable>(_: Header.Type) -> Header? {
        guard payload.count >= MemoryLayout<Header>.size else { return nil }
        return payload.withUnsafeBytes { $0.loadUnaligned(as: Header.self) }
    }

    /// The attributes after a family header of type `Header` (last one wins on repeats).
    func attributes<Header>(after _: Header.Type) -> NetlinkAttributes {
        NetlinkAttributes(payload, from: Int(sluice_rta_align(UInt32(MemoryLayout<Header>.size))))
    }
}

/// Route attributes parsed from a payload, by type (flag bits such as `NLA_F_NESTED` removed).
struct NetlinkAttributes {
    private(set) var values: [UInt16: [UInt8]] = [:]

    init(_ bytes: [UInt8], from start: Int) {
        var offset = start
        let headerLength = Int(sluice_rta_hdrlen())
        while bytes.count - offset >= headerLength {
            let (length, type) = bytes.withUnsafeBytes {
                (Int($0.loadUnaligned(fromByteOffset: offset, as: UInt16.self)),
                 $0.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self))
            }
            guard length >= headerLength, length <= bytes.count - offset else { break }
            values[type & sluice_nla_type_mask()] = Array(bytes[(offset + headerLength)..<(offset + length)])
            offset += Int(sluice_rta_align(UInt32(length)))
        }
    }

    subscript(_ type: some BinaryInteger) -> [UInt8]? { values[UInt16(type)] }

    /// A `u32` attribute (host byte order).
    func uint32(_ type: some BinaryInteger) -> UInt32? {
        guard let v = self[type], v.count >= 4 else { return nil }
        return v.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
    }

    /// A NUL-terminated string attribute.
    func string(_ type: some BinaryInteger) -> String? {
        guard let v = self[type] else { return nil }
        return String(decoding: v.prefix { $0 != 0 }, as: UTF8.self)
    }
}
