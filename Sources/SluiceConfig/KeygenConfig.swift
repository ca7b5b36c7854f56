/// Validated settings of `sluice keygen`.
public struct KeygenConfig: Sendable, Equatable {
    /// `--output FILE`: write the key there (mode 0600) instead of to standard output.
    public let output: String?
    /// `--force`: replace an existing `output` file instead of refusing.
    public let replacing: Bool

    public init(output: String? = nil, replacing: Bool = false) {
        self.output = output
        self.replacing = replacing
    }

    init(settings: Settings) throws(ConfigError) {
        var output: String?
        if let raw = settings.value("output") {
            guard !raw.text.isEmpty else { throw .invalidValue(raw.origin, value: raw.text, expected: "a file name") }
            output = raw.text
        }
        if output == nil, let force = settings.switchOn("force") {
            throw .needsCompanion(force, needs: "--output")
        }
        self.init(output: output, replacing: settings.switchOn("force") != nil)
    }
}
