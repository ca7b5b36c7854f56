/// Objects in the order they were last active, the one idle longest first: `touch`, `remove` and
/// `oldest` all take constant time. For evicting the longest-idle UDP mapping at a cap, which a
/// scan over all mappings did per new mapping (1,024 by default, at 20,000 new mappings a second).
/// Not thread-safe: confined to its loop, like its owner.
public final class IdleList<Element: AnyObject> {
    private final class Node {
        let element: Element
        var next: Node?
        // Nodes are unlinked from both neighbours together, so this never outlives its target.
        unowned(unsafe) var previous: Node?
        init(_ element: Element) { self.element = element }
    }

    private var nodes: [ObjectIdentifier: Node] = [:]
    private var head: Node?
    private unowned(unsafe) var tail: Node?

    public init() {}

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

    public var count: Int { nodes.count }

    /// The element idle longest (touched least recently).
    public var oldest: Element? { head?.element }

    /// Marks `element` as active now: it moves to the end (added if new).
    public func touch(_ element: Element) {
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
    public func remove(_ element: Element) {
        guard let node = nodes.removeValue(forKey: ObjectIdentifier(element)) else { return }
        unlink(node)
    }

    private func append(_ node: Node) {
        node.previous = tail
        node.next = nil
        if let tail { tail.next = node } else { head = node }
        tail = node
    }

    private func unlink(_ node: Node) {
        if let previous = node.previous { previous.next = node.next } else { head = node.next }
        if let next = node.next { next.previous = node.previous } else { tail = node.previous }
        node.previous = nil
        node.next = nil
    }
}
