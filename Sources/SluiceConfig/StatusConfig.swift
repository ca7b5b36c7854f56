/// Validated settings of `sluice status`: which running tunnels and relays to show, and how.
public struct StatusConfig: Sendable, Equatable {
    /// Show only this tunnel (`--tun`).
    public let tun: String?
    /// Show only relays (`--relay`).
    public let relayOnly: Bool
    /// A relay's control socket other than the default (`--control`); implies relays only.
    public let control: String?
    /// One JSON document on standard output instead of the table (`--json`).
    public let json: Bool
    /// Refresh in place once a second until interrupted (`--watch`).
    public let watch: Bool

    public init(tun: String? = nil, relayOnly: Bool = false, control: String? = nil, json: Bool = false, watch: Bool = false) {
        self.tun = tun
        self.relayOnly = relayOnly
        self.control = control
        self.json = json
        self.watch = watch
    }

    init(settings: Settings) throws(ConfigError) {
        let tun = try settings.optionalInterfaceName("tun")
        let relay = settings.switchOn("relay")
        if let relay, let raw = settings.value("tun") { throw .conflicting(relay, raw.origin) }
        let json = settings.switchOn("json")
        let watch = settings.switchOn("watch")
        if let json, let watch { throw .conflicting(json, watch) }
        let control = settings.value("control")?.text
        self.init(tun: tun, relayOnly: relay != nil || control != nil, control: control, json: json != nil, watch: watch != nil)
    }
}

extension CommandSpec {
    static let status = CommandSpec(
        name: "status", summary: "show running tunnels and relays: carriers, handshakes, RTT, flows, bytes, drops",
        synopsis: ["[--tun NAME | --relay [--control PATH]] [--json | --watch]"],
        about: "Like `wg show`: asks every sluice up and sluice relay running on this host over its control socket in "
            + "/run/sluice (root only) and prints what each reports. Exits 1 when nothing is running.",
        flags: [
            FlagSpec("tun", "NAME", inConfigFile: false, help: "show only this tunnel"),
            FlagSpec("relay", kind: .switch, inConfigFile: false, help: "show only relays"),
            FlagSpec("control", "PATH", kind: .path, inConfigFile: false,
                     help: "a relay's control socket, when it was started with --control"),
            FlagSpec("json", kind: .switch, inConfigFile: false, help: "print one JSON document (schema: docs/configuration.md)"),
            FlagSpec("watch", kind: .switch, inConfigFile: false, help: "refresh in place once a second until Ctrl-C"),
            .help,
        ],
        build: { settings throws(ConfigError) in .status(try StatusConfig(settings: settings)) })
}
