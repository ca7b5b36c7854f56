/// How a client with several relays uses them (`--relay-policy`). With one relay both are the same.
public enum RelayPolicy: String, Sendable, Equatable, CaseIterable, Codable {
    /// Every carrier goes to the first healthy relay in list order; when it fails, to the next; when
    /// an earlier one is healthy again, new flows go back to it, while flows on the later one stay
    /// there until they end.
    case failover
    /// Carriers go to every healthy relay; each new flow to the least loaded.
    case spread
}
