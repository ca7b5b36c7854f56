/// UDP mapping limits shared by `up` and `relay` (docs/protocol.md §6).
public enum UDPDefaults {
    /// Idle seconds before a mapping expires, like most NATs' UDP timeout.
    public static let timeoutSeconds = 60
    public static let timeoutRange = 1.0...86_400.0
    /// Mappings kept at once; the oldest idle one goes first when full.
    public static let maxMappings = 1024
    public static let maxMappingsRange = 1...65_536
}
