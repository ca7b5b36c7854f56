/// What an element of an `IdleList` keeps for the list: its place in it, so that `touch` and `remove`
/// go straight to it instead of looking it up. An element is in at most one list at a time.
public protocol IdleListMember: AnyObject {
    /// The element's place in its list, nil while it is in none. Only `IdleList` sets it.
    var idleListEntry: IdleListEntry? { get set }
}

/// An element's place in an `IdleList`. Not generic, so that `IdleListMember` needs no associated
/// type; the list that made it knows the element's type.
public final class IdleListEntry {
    /// The element, held by the list while it is in it. Element and entry hold each other until
    /// `remove` (or the list's deinit) lets go of both.
    @usableFromInline var element: AnyObject?
    @usableFromInline var next: IdleListEntry?
    // Entries are unlinked from both neighbours together, so this never outlives its target.
    @usableFromInline unowned(unsafe) var previous: IdleListEntry?
    /// The list it is in, to catch an element handed to two lists.
    @usableFromInline let list: ObjectIdentifier
    @inlinable init(_ element: AnyObject, list: ObjectIdentifier) {
        self.element = element
        self.list = list
    }
}

/// Objects in the order they were last active, the one idle longest first: `touch`, `remove` and
/// `oldest` all take constant time. For evicting the longest-idle UDP mapping at a cap, which a
/// scan over all mappings did per new mapping (1,024 by default, at 20,000 new mappings a second).
/// Not thread-safe: confined to its loop, like its owner.
///
/// Each element keeps its own entry (`IdleListMember`) rather than the list keeping a dictionary
/// from elements to entries: with a new UDP socket per request each end adds one element and removes
/// another per request and touches one per datagram, and at the 1,024-element cap removing a key
/// from a Swift dictionary rehashed the keys after it — about 960 instructions per `remove`, 400 per
/// new element (callgrind of `sluice relay` and `sluice up` under `Benchmarks/e2e/reqcpu.py --test
/// udp-new --in-flight 1`).
///
/// Inlinable, so that the modules that keep one get it specialised for their element type: called
/// through its generic entry points, every operation looked up its class's generic metadata.
public final class IdleList<Element: IdleListMember> {
    @usableFromInline var head: IdleListEntry?
    @usableFromInline unowned(unsafe) var tail: IdleListEntry?
    @usableFromInline var elements = 0

    @inlinable public init() {}

    deinit {
        // Let go of every element and unlink every entry: released as a chain, entries would free
        // each other recursively, as deep as the list is long.
        var entry = head
        head = nil
        while let current = entry {
            entry = current.next
            current.next = nil
            if let element = current.element {
                unsafeDowncast(element, to: Element.self).idleListEntry = nil
                current.element = nil
            }
        }
    }

    @inlinable public var count: Int { elements }

    /// The element idle longest (touched least recently).
    @inlinable public var oldest: Element? {
        guard let element = head?.element else { return nil }
        return unsafeDowncast(element, to: Element.self)
    }

    /// Marks `element` as active now: it moves to the end (added if new).
    @inlinable public func touch(_ element: Element) {
        if let entry = element.idleListEntry {
            assert(entry.list == ObjectIdentifier(self), "an element is in one IdleList at a time")
            guard entry !== tail else { return }
            unlink(entry)
            append(entry)
        } else {
            let entry = IdleListEntry(element, list: ObjectIdentifier(self))
            element.idleListEntry = entry
            elements += 1
            append(entry)
        }
    }

    /// Forgets `element` (no effect if absent).
    @inlinable public func remove(_ element: Element) {
        guard let entry = element.idleListEntry else { return }
        assert(entry.list == ObjectIdentifier(self), "an element is in one IdleList at a time")
        unlink(entry)
        elements -= 1
        element.idleListEntry = nil
        entry.element = nil
    }

    @inlinable func append(_ entry: IdleListEntry) {
        entry.previous = tail
        entry.next = nil
        if let tail { tail.next = entry } else { head = entry }
        tail = entry
    }

    @inlinable func unlink(_ entry: IdleListEntry) {
        if let previous = entry.previous { previous.next = entry.next } else { head = entry.next }
        if let next = entry.next { next.previous = entry.previous } else { tail = entry.previous }
        entry.previous = nil
        entry.next = nil
    }
}
