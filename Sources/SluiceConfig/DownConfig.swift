/// Validated settings of `sluice down`.
public struct DownConfig: Sendable, Equatable {
    /// The tunnel to take down (`--tun`), or nil for "the only one recorded".
    public let tun: String?
    /// Canonical `--log-level` name.
    public let logLevel: String

    public init(tun: String?, logLevel: String = "info") {
        self.tun = tun
        self.logLevel = logLevel
    }

    init(settings: Settings) throws(ConfigError) {
        self.init(tun: try settings.optionalInterfaceName("tun"),
                  logLevel: try settings.logLevel())
    }
}
