/// Finds the known name a typo most likely meant, for "did you mean …?" in errors.
enum Suggestion {
    /// The candidate closest to `typed`, if it is close: within an edit distance of a third of its
    /// length (at least 1, at most 4), or the only candidate that `typed` abbreviates.
    static func closest(to typed: String, among candidates: [String]) -> String? {
        let scored = candidates.map { (name: $0, distance: editDistance(typed.lowercased(), $0.lowercased())) }
        if let best = scored.min(by: { $0.distance < $1.distance }),
           best.distance <= min(4, max(1, best.name.count / 3)) {
            return best.name
        }
        let extending = candidates.filter { typed.count >= 2 && $0.hasPrefix(typed) }
        return extending.count == 1 ? extending[0] : nil
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    /// neighbours each cost 1, so "listne" is 1 away from "listen".
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], before[j - 2] + 1)
                }
            }
            (before, previous, current) = (previous, current, before)
        }
        return previous[b.count]
    }
}
