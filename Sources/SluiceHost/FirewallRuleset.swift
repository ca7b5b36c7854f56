import SluiceWire

/// The nftables rules `sluice up` installs for `--kill-switch` and `--no-ipv6`, in a table of
/// Sluice's own (`inet sluice`), as nft text for libnftables. Pure: `text` only builds the string.
///
/// Output chain, in order (the first match decides):
/// 1. loopback passes;
/// 2. for every listed relay: carrier sockets pass (marked with the fwmark, to the relay's address and
///    TCP port), and so do the UDP path's sockets (marked, to that address and the same UDP port,
///    docs/protocol.md §8) — with `relayUDP`, a SOCKS5 upstream's marked UDP to that address on any
///    port instead (its UDP relay port comes with each association);
/// 3. IPv6 neighbour discovery and router solicitation on the link (hop limit 255) pass, so the
///    link keeps working (the relay may sit behind an IPv6 router);
/// 4. with `blockIPv6`: every other IPv6 packet is rejected (ICMPv6 administratively prohibited),
///    so applications fall back to IPv4 at once and IPv6 never goes around the tunnel;
/// 5. with `killSwitch`: packets leaving through the TUN pass, DHCP (UDP 68→67, 546→547) passes so
///    the address lease survives, and everything else is rejected (ICMP administratively prohibited).
///    Replies on connections made before `up` are not let through: that would be a way around.
/// With `killSwitch` a forward chain also lets only the TUN through (containers, VMs behind the host).
///
/// The kill-switch chains use policy drop as well as a final reject, so even a rule nft could not
/// match falls to drop. Interfaces are matched by name (`oifname`), not index, so the rules keep
/// their meaning after the TUN is gone (a crashed `up`) and for the TUN of the next `up`.
public struct FirewallRuleset: Hashable, Sendable, CustomStringConvertible {
    /// nft's address family of the table: `inet` covers IPv4 and IPv6.
    public static let family = "inet"
    /// The table's name; Sluice never touches other tables.
    public static let defaultTableName = "sluice"

    public var tableName: String
    public var tun: String
    /// The relays (or the SOCKS5 server) the carriers go to.
    public var relays: [SocketEndpoint]
    public var fwmark: UInt32
    public var killSwitch: Bool
    public var blockIPv6: Bool
    /// Marked UDP to the relays' addresses passes too (a SOCKS5 server's UDP associations).
    public var relayUDP: Bool

    public init(tableName: String = FirewallRuleset.defaultTableName, tun: String, relays: [SocketEndpoint], fwmark: UInt32,
                killSwitch: Bool, blockIPv6: Bool, relayUDP: Bool = false) {
        self.tableName = tableName
        self.tun = tun
        self.relays = relays
        self.fwmark = fwmark
        self.killSwitch = killSwitch
        self.blockIPv6 = blockIPv6
        self.relayUDP = relayUDP
    }

    /// `inet sluice`.
    public var table: String { "\(Self.family) \(tableName)" }

    public var description: String {
        var what: [String] = []
        if killSwitch { what.append("kill switch") }
        if blockIPv6 { what.append("IPv6 blocked") }
        return "nftables table \(table) (\(what.joined(separator: ", ")))"
    }

    /// The commands that create the table with its chains, as one transaction. `create table` fails
    /// if the table exists already, so a table that is not Sluice's own is never taken over.
    public var text: String {
        let tunName = Self.quoted(tun)
        let mark = "0x" + String(fwmark, radix: 16)
        var output = ["oifname \"lo\" accept"]
        for relay in relays {
            let family = relay.address.isIPv4 ? "ip" : "ip6"
            output.append("meta mark \(mark) \(family) daddr \(relay.address) tcp dport \(relay.port) accept")
            output.append(relayUDP ? "meta mark \(mark) \(family) daddr \(relay.address) meta l4proto udp accept"
                                   : "meta mark \(mark) \(family) daddr \(relay.address) udp dport \(relay.port) accept")
        }
        output.append("icmpv6 type { nd-router-solicit, nd-neighbor-solicit, nd-neighbor-advert } ip6 hoplimit 255 accept")
        if blockIPv6 { output.append("meta nfproto ipv6 counter reject with icmpv6 type admin-prohibited") }
        if killSwitch {
            output += [
                "oifname \(tunName) accept",
                "udp sport 68 udp dport 67 accept",
                "udp sport 546 udp dport 547 accept",
                "counter reject with icmpx type admin-prohibited",
            ]
        }
        var lines = [
            "create table \(table)",
            "table \(table) {",
            "\tchain output {",
            "\t\ttype filter hook output priority filter; policy \(killSwitch ? "drop" : "accept");",
        ]
        lines += output.map { "\t\t" + $0 }
        lines.append("\t}")
        if killSwitch {
            lines += [
                "\tchain forward {",
                "\t\ttype filter hook forward priority filter; policy drop;",
                "\t\toifname \(tunName) accept",
                "\t\tcounter reject with icmpx type admin-prohibited",
                "\t}",
            ]
        }
        lines.append("}")
        return lines.joined(separator: "\n") + "\n"
    }

    /// The command that removes the table with everything in it.
    public static func deleteText(table: String) -> String { "delete table \(table)\n" }

    /// An nft string literal. Interface names cannot hold `"` or whitespace (the kernel refuses
    /// them), so quoting is enough.
    static func quoted(_ name: String) -> String { "\"\(name)\"" }
}
