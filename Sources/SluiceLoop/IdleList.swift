/// Objects in the order they were last active, the one idle longest first: `touch`, `remove` and
/// `oldest` all take constant time. For evicting the longest-idle UDP mapping at a cap, which a
/// scan over all mappings did per new mapping (1,024 by default, at 20,000 new mappings a second).
/// Not thread-safe: confined to its loop, like its owner.
///
/// Inlinable, so that the modules that keep one (the relay's associations, the client's UDP mappings,
/// touched for every datagram) get it specialised for their element type: called through its generic
/// entry points, each new node looked up its class's generic metadata and every dictionary operation
/// ran unspecialised. `touch` and `remove` took 3.6 % of a relay's samples with a new UDP socket per
/// request (`Benchmarks/e2e/reqcpu.py --test udp-new --perf`), specialised 0.9 %.
public final class IdleList<Element: AnyObject> {
    @usableFromInline
    final class Node {
        @usableFromInline let element: Element
        @usableFromInline var next: Node?
        // Nodes are unlinked from both neighbours together, so this never outlives its target.
        @usableFromInline unowned(unsafe) var previous: Node?
        @inlinable init(_ element: Element) { self.element = element }
    }

    @usableFromInline var nodes: [ObjectIdentifier: Node] = [:]
    @usableFromInline var head: Node?
    @usableFromInline unowned(unsafe) var tail: Node?

    @inlinable public init() {}

    deinit {
        // Unlink every node first: released as a chain, nodes would free each other recursively, as
        // deep as the list is long.
        var node = head
        head = nil
        while let current = node {
            node = current.next
            current.next = nil
        }
    }

    @inlinable public var count: Int { nodes.count }

    /// The element idle longest (touched least recently).
    @inlinable public var oldest: Element? { head?.element }

    /// Marks `element` as active now: it moves to the end (added if new).
    @inlinable public func touch(_ element: Element) {
        let id = ObjectIdentifier(element)
        if let node = nodes[id] {
            guard node !== tail else { return }
            unlink(node)
            append(node)
        } else {
            let node = Node(element)
            nodes[id] = node
            append(node)
        }
    }

    /// Forgets `element` (no effect if absent).
    @inlinable public func remove(_ element: Element) {
        guard let node = nodes.removeValue(forKey: ObjectIdentifier(element)) else { return }
        unlink(node)
    }

    @inlinable func append(_ node: Node) {
        node.previous = tail
        node.next = nil
        if let tail { tail.next = node } else { head = node }
        tail = node
    }

    @inlinable func unlink(_ node: Node) {
        if let previous = node.previous { previous.next = node.next } else { head = node.next }
        if let next = node.next { next.previous = node.previous } else { tail = node.previous }
        node.previous = nil
        node.next = nil
    }
}
