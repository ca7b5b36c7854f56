import Glibc

/// Carries a loop-confined value through a Sendable closure and back onto its loop: the one audited
/// bridge between Swift 6's Sendable checking and loop confinement (after swift-nio's `NIOLoopBound`).
/// The value is only ever touched on the loop's thread.
public struct LoopBound<Value>: @unchecked Sendable {
    private let value: Value
    private let handle: LoopHandle

    public init(_ value: Value, loop: EventLoop) {
        self.value = value
        self.handle = loop.handle
    }

    /// Runs `body` with the value on the loop's thread. Callable from any thread.
    public func execute(_ body: @escaping @Sendable (Value) -> Void) {
        let copy = self
        handle.execute { body(copy.value) }
    }
}
