import SluiceWire

/// Which destinations the relay connects to for its clients: rules by address prefix, the most
/// specific matching prefix decides, and an address no rule covers is allowed.
///
/// Built in, the relay refuses what would reach the relay host itself or its link rather than the
/// network it serves: loopback, "this host" (0.0.0.0/8 — on Linux a connect to 0.0.0.0 reaches local
/// services — and ::), link-local (cloud metadata services live at 169.254.169.254 and
/// fd00:ec2::254), multicast and the limited broadcast. `--allow-destination` and
/// `--deny-destination` add rules; a configured rule for exactly the prefix of a built-in one
/// replaces it, and a longer one wins inside it (`--allow-destination 127.0.0.1/32` opens one
/// loopback address). IPv4-mapped IPv6 addresses (`::ffff:127.0.0.1`) reach IPv4 through an IPv6
/// socket, so they are judged by the IPv4 rules, and configured prefixes inside ::ffff:0:0/96 are
/// turned into IPv4 ones.
///
/// Matching allocates nothing and walks only the rules of the address's family (a few integer
/// compares each): the relay judges every UDP datagram's destination.
public struct DestinationPolicy: Sendable, Equatable {
    public enum Verdict: Sendable, Equatable { case allow, deny }

    /// Where a rule comes from, for the refusal message.
    public enum Origin: Sendable, Equatable {
        /// One of the relay's own rules, with what the prefix is.
        case builtIn(String)
        /// `--allow-destination` / `allowDestination`.
        case allowFlag
        /// `--deny-destination` / `denyDestination`.
        case denyFlag
    }

    public struct Rule: Sendable, Equatable, CustomStringConvertible {
        public let prefix: IPPrefix
        public let verdict: Verdict
        public let origin: Origin

        /// `built-in rule 127.0.0.0/8 (loopback)`, `--deny-destination 10.0.0.0/8`.
        public var description: String {
            switch origin {
            case .builtIn(let what): return "built-in rule \(prefix) (\(what))"
            case .allowFlag: return "--allow-destination \(prefix)"
            case .denyFlag: return "--deny-destination \(prefix)"
            }
        }
    }

    /// The built-in rules, all `deny`.
    public static let builtIn: [Rule] = [
        ("0.0.0.0/8", "this host: 0.0.0.0 reaches the relay host's own services"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local, where cloud metadata services answer"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("::/128", "unspecified: reaches the relay host's own services"),
        ("::1/128", "loopback"),
        ("fe80::/10", "link-local"),
        ("fd00:ec2::254/128", "the EC2 instance metadata service"),
        ("ff00::/8", "multicast"),
    ].map { Rule(prefix: IPPrefix($0.0)!, verdict: .deny, origin: .builtIn($0.1)) }

    /// Every rule in force, the most specific first.
    public let rules: [Rule]
    /// `rules`' prefixes as masks, per family, in the same order, with each one's index in `rules`.
    private let v4Matchers: [Matcher<UInt32>]
    private let v6Matchers: [Matcher<UInt128>]

    /// The built-in rules with `allow` and `deny` on top. The caller has made sure no prefix is in
    /// both lists (`RelayConfig` refuses that).
    public init(allow: [IPPrefix] = [], deny: [IPPrefix] = []) {
        let configured = allow.map { Rule(prefix: Self.normalized($0), verdict: .allow, origin: .allowFlag) }
            + deny.map { Rule(prefix: Self.normalized($0), verdict: .deny, origin: .denyFlag) }
        let kept = Self.builtIn.filter { builtIn in !configured.contains { $0.prefix == builtIn.prefix } }
        // Stable: equal lengths keep their order (they cannot both match one address anyway).
        rules = (configured + kept).enumerated()
            .sorted { ($0.element.prefix.length, -$0.offset) > ($1.element.prefix.length, -$1.offset) }
            .map(\.element)
        var v4: [Matcher<UInt32>] = []
        var v6: [Matcher<UInt128>] = []
        for (index, rule) in rules.enumerated() {
            switch rule.prefix.address {
            case .v4(let a): v4.append(Matcher(a, length: rule.prefix.length, rule: index, verdict: rule.verdict))
            case .v6(let hi, let lo): v6.append(Matcher(Self.joined(hi, lo), length: rule.prefix.length, rule: index, verdict: rule.verdict))
            }
        }
        v4Matchers = v4
        v6Matchers = v6
    }

    /// The most specific rule that covers `address`, or nil when none does (then it is allowed).
    public func rule(for address: IPAddress) -> Rule? {
        guard let matcher = matcher(for: address) else { return nil }
        return rules[matcher.rule]
    }

    /// The rule that refuses `address`, or nil when it is allowed.
    public func refusal(of address: IPAddress) -> Rule? {
        guard let matcher = matcher(for: address), matcher.verdict == .deny else { return nil }
        return rules[matcher.rule]
    }

    /// Whether the relay may connect to `address`: `refusal(of:) == nil` without copying a rule.
    public func allows(_ address: IPAddress) -> Bool {
        matcher(for: address)?.verdict != .deny
    }

    private func matcher(for address: IPAddress) -> (rule: Int, verdict: Verdict)? {
        switch Self.judged(address) {
        case .v4(let a):
            for m in v4Matchers where a & m.mask == m.network { return (m.rule, m.verdict) }
        case .v6(let hi, let lo):
            let a = Self.joined(hi, lo)
            for m in v6Matchers where a & m.mask == m.network { return (m.rule, m.verdict) }
        }
        return nil
    }

    private static func joined(_ hi: UInt64, _ lo: UInt64) -> UInt128 { UInt128(hi) << 64 | UInt128(lo) }

    /// The address as the policy judges it: an IPv4-mapped IPv6 address as its IPv4 address.
    static func judged(_ address: IPAddress) -> IPAddress {
        if case .v6(0, let low) = address, low >> 32 == 0xFFFF { return .v4(UInt32(truncatingIfNeeded: low)) }
        return address
    }

    /// A configured prefix with host bits cleared, and turned into IPv4 when it lies inside
    /// ::ffff:0:0/96.
    static func normalized(_ prefix: IPPrefix) -> IPPrefix {
        let length = prefix.length
        switch prefix.address {
        case .v4(let a):
            return IPPrefix(address: .v4(a & Matcher<UInt32>.mask(length)), length: length)!
        case .v6(let hi, let lo):
            let network = joined(hi, lo) & Matcher<UInt128>.mask(length)
            if network >> 32 == 0xFFFF, length >= 96 {
                return IPPrefix(address: .v4(UInt32(truncatingIfNeeded: network)), length: length - 96)!
            }
            return IPPrefix(address: .v6(UInt64(truncatingIfNeeded: network >> 64), UInt64(truncatingIfNeeded: network)), length: length)!
        }
    }

    /// One rule's prefix as a mask over an address's bits, with the rule's index and verdict.
    private struct Matcher<Bits: FixedWidthInteger & UnsignedInteger & Sendable>: Sendable, Equatable {
        let network: Bits
        let mask: Bits
        let rule: Int
        let verdict: Verdict

        init(_ address: Bits, length: Int, rule: Int, verdict: Verdict) {
            mask = Self.mask(length)
            network = address & mask
            self.rule = rule
            self.verdict = verdict
        }

        /// The top `length` bits set.
        static func mask(_ length: Int) -> Bits { length == 0 ? 0 : ~0 << (Bits.bitWidth - length) }
    }
}
