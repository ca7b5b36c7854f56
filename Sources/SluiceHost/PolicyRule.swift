import CSluiceHostShims
import Glibc
import SluiceWire

/// A policy routing rule that sends matching packets to a table:
/// `[not] [to PREFIX] [fwmark M/MASK] lookup T [suppress_prefixlength N]` at priority P (what
/// `ip rule add` installs). Sluice adds `not fwmark 0x534c lookup 21324`: all traffic uses its
/// table, except its own carrier sockets, which carry the mark and so keep the main table instead
/// of looping into the TUN. `--route-all` adds `lookup main suppress_prefixlength 0` (the main
/// table, but not its default routes) and `to <resolver> lookup 21324` (see `HostRouting.routeAllPlan`).
public struct PolicyRule: Hashable, Sendable, CustomStringConvertible {
    /// Which rule list the rule lives in; IPv4 and IPv6 rules are separate in the kernel.
    public enum Family: Hashable, Sendable, CustomStringConvertible {
        case ipv4, ipv6

        var addressFamily: UInt8 { UInt8(self == .ipv4 ? AF_INET : AF_INET6) }
        public var description: String { self == .ipv4 ? "IPv4" : "IPv6" }
    }

    public var family: Family
    /// The preference (`FRA_PRIORITY`): lower runs first; 0 is `local`, 32766 is `main`.
    public var priority: UInt32
    /// The table to look up (`FRA_TABLE`).
    public var table: UInt32
    /// The mark to match (`FRA_FWMARK`), or `nil` to match every packet.
    public var fwmark: UInt32?
    /// The bits of the mark compared (`FRA_FWMASK`).
    public var fwmask: UInt32
    /// Match packets that do NOT match the selector (`FIB_RULE_INVERT`, `ip rule add not ...`).
    public var invert: Bool
    /// Match only packets to this prefix (`FRA_DST`), or `nil` for any destination.
    public var destination: IPPrefix?
    /// Ignore answers of the table whose prefix is this long or shorter (`FRA_SUPPRESS_PREFIXLEN`):
    /// 0 ignores default routes, so the lookup goes on to the next rule.
    public var suppressPrefixLength: UInt32?
    /// The transport protocol to match (`FRA_IP_PROTO`, `ipproto udp`), or `nil` for any.
    public var ipProtocol: UInt8?
    /// The destination port to match (`FRA_DPORT_RANGE` of one port, `dport 53`), or `nil` for any.
    public var destinationPort: UInt16?

    public init(family: Family, priority: UInt32, table: UInt32, fwmark: UInt32? = nil, fwmask: UInt32 = .max, invert: Bool = false,
                destination: IPPrefix? = nil, suppressPrefixLength: UInt32? = nil, ipProtocol: UInt8? = nil, destinationPort: UInt16? = nil) {
        self.family = family
        self.priority = priority
        self.table = table
        self.fwmark = fwmark
        self.fwmask = fwmask
        self.invert = invert
        self.destination = destination?.network
        self.suppressPrefixLength = suppressPrefixLength
        self.ipProtocol = ipProtocol
        self.destinationPort = destinationPort
    }

    /// `IPv4 rule 21324: not fwmark 0x534c lookup 21324`.
    public var description: String {
        var selectors: [String] = []
        if let destination { selectors.append("to \(destination)") }
        if let fwmark {
            selectors.append("fwmark 0x\(String(fwmark, radix: 16))" + (fwmask == .max ? "" : "/0x\(String(fwmask, radix: 16))"))
        }
        if let ipProtocol { selectors.append("ipproto \(ipProtocol == 17 ? "udp" : ipProtocol == 6 ? "tcp" : String(ipProtocol))") }
        if let destinationPort { selectors.append("dport \(destinationPort)") }
        let selector = selectors.isEmpty ? "from all" : selectors.joined(separator: " ")
        let suppress = suppressPrefixLength.map { " suppress_prefixlength \($0)" } ?? ""
        let tableName = table == 254 ? "main" : String(table)
        return "\(family) rule \(priority): \(invert ? "not " : "")\(selector) lookup \(tableName)\(suppress)"
    }
}

/// Rule operations (`RTM_NEWRULE`, `RTM_DELRULE`, `RTM_GETRULE`).
extension NetlinkSocket {
    /// Adds `rule`; fails with `EEXIST` if the kernel already has a rule it considers the same.
    public func add(_ rule: PolicyRule) throws(HostError) {
        try execute(ruleMessage(rule, type: RTM_NEWRULE, flags: NLM_F_CREATE | NLM_F_EXCL), operation: "add \(rule)")
    }

    /// Deletes `rule`; fails with `ENOENT` if it is not there. The kernel matches a delete on
    /// priority, table, mark and mask but not on the invert flag, so this first checks that the
    /// exact rule (invert flag included) exists, and refuses with `ENOENT` otherwise rather than
    /// remove a look-alike someone else added.
    public func delete(_ rule: PolicyRule) throws(HostError) {
        let operation = "delete \(rule)"
        let present = try rules(family: rule.family).filter {
            $0.priority == rule.priority && $0.table == rule.table && $0.fwmark == rule.fwmark && $0.fwmask == rule.fwmask
                && $0.destination == rule.destination && $0.suppressPrefixLength == rule.suppressPrefixLength
                && $0.ipProtocol == rule.ipProtocol && $0.destinationPort == rule.destinationPort
        }
        guard present.contains(rule) else {
            throw .netlinkRequest(operation: operation, errno: ENOENT, kernelMessage: nil)
        }
        guard present.count == 1 else {
            throw .netlinkReply(operation: operation, problem: "a rule differing only in the invert flag has the same priority, so the kernel cannot tell them apart; remove them by hand (ip rule)")
        }
        try execute(ruleMessage(rule, type: RTM_DELRULE, flags: 0), operation: operation)
    }

    /// The rules of `family`, as far as `PolicyRule` can express them (selectors other than the
    /// mark, such as `from`, `iif` or `uidrange`, are not shown).
    public func rules(family: PolicyRule.Family) throws(HostError) -> [PolicyRule] {
        try ruleMessages(family: family).compactMap { message in
            guard let header = message.familyHeader(fib_rule_hdr.self) else { return nil }
            let attributes = message.attributes(after: fib_rule_hdr.self)
            let fwmark = attributes.uint32(FRA_FWMARK)
            let destination = attributes[FRA_DST].flatMap { raw in
                raw.count == 4 || raw.count == 16 ? IPPrefix(address: IPAddress(bytes: raw), length: Int(header.dst_len)) : nil
            }
            // The kernel reports "no suppression" as -1, or leaves the attribute out.
            let suppress = attributes.uint32(FRA_SUPPRESS_PREFIXLEN).flatMap { $0 == .max ? nil : $0 }
            return PolicyRule(
                family: family, priority: attributes.uint32(FRA_PRIORITY) ?? 0,
                table: attributes.uint32(FRA_TABLE) ?? UInt32(header.table),
                fwmark: fwmark, fwmask: fwmark == nil ? .max : attributes.uint32(FRA_FWMASK) ?? .max,
                invert: header.flags & UInt32(FIB_RULE_INVERT) != 0,
                destination: destination, suppressPrefixLength: suppress,
                ipProtocol: attributes[FRA_IP_PROTO]?.first,
                destinationPort: attributes[FRA_DPORT_RANGE].flatMap { range in
                    // struct fib_rule_port_range { __u16 start, end; } in host order; one port only.
                    range.count >= 4 && range[0] == range[2] && range[1] == range[3]
                        ? range.withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) } : nil
                })
        }
    }

    /// Deletes every rule of `family` that looks up `table`, for cleaning up after a crash; returns
    /// how many went. Each dumped rule is sent back as its own `RTM_DELRULE`.
    @discardableResult
    public func deleteRules(lookingUp table: UInt32, family: PolicyRule.Family) throws(HostError) -> Int {
        var deleted = 0
        for var message in try ruleMessages(family: family) {
            guard let header = message.familyHeader(fib_rule_hdr.self),
                (message.attributes(after: fib_rule_hdr.self).uint32(FRA_TABLE) ?? UInt32(header.table)) == table
            else { continue }
            message.type = UInt16(RTM_DELRULE)
            message.flags = 0
            do {
                try execute(message, operation: "delete a \(family) rule looking up table \(table)")
                deleted += 1
            } catch where error.errno == ENOENT {
                continue
            }
        }
        return deleted
    }

    private func ruleMessages(family: PolicyRule.Family) throws(HostError) -> [NetlinkMessage] {
        var header = fib_rule_hdr()
        header.family = family.addressFamily
        let request = NetlinkMessage(type: RTM_GETRULE, flags: 0, header: header)
        return try dump(request, operation: "list \(family) rules").filter { $0.type == RTM_NEWRULE }
    }

    func ruleMessage(_ rule: PolicyRule, type: Int, flags: Int32) -> NetlinkMessage {
        var header = fib_rule_hdr()
        header.family = rule.family.addressFamily
        header.table = rule.table < 256 ? UInt8(rule.table) : UInt8(RT_TABLE_UNSPEC.rawValue)
        header.action = UInt8(FR_ACT_TO_TBL)
        header.flags = rule.invert ? UInt32(FIB_RULE_INVERT) : 0
        header.dst_len = UInt8(rule.destination?.length ?? 0)
        var message = NetlinkMessage(type: type, flags: flags, header: header)
        message.append(FRA_PRIORITY, uint32: rule.priority)
        message.append(FRA_TABLE, uint32: rule.table)
        if let destination = rule.destination { message.append(FRA_DST, bytes: destination.address.bytes) }
        if let suppress = rule.suppressPrefixLength { message.append(FRA_SUPPRESS_PREFIXLEN, uint32: suppress) }
        if let fwmark = rule.fwmark {
            message.append(FRA_FWMARK, uint32: fwmark)
            message.append(FRA_FWMASK, uint32: rule.fwmask)
        }
        if let ipProtocol = rule.ipProtocol { message.append(FRA_IP_PROTO, bytes: [ipProtocol]) }
        if let port = rule.destinationPort {
            message.append(FRA_DPORT_RANGE, bytes: withUnsafeBytes(of: port) { Array($0) } + withUnsafeBytes(of: port) { Array($0) })
        }
        return message
    }
}
