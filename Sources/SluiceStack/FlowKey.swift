import SluiceWire

/// Identity of one TCP flow seen on the TUN: the application's endpoint and the destination it dialled.
public struct FlowKey: Hashable, Sendable, CustomStringConvertible {
    public let application: SocketEndpoint
    public let destination: SocketEndpoint

    public init(application: SocketEndpoint, destination: SocketEndpoint) {
        self.application = application
        self.destination = destination
    }

    public var description: String { "\(application) -> \(destination)" }
}
