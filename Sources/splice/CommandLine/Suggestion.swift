/// "Did you mean …?" for mistyped option names, subcommands and choices.
enum Suggestion {
    /// The candidate closest to `word`: within a small edit distance (a swap of two neighbouring
    /// letters counts as one edit), or the only candidate that `word` is a prefix of.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let limit = max(1, min(3, word.count / 3))
        let scored = candidates.map { (candidate: $0, distance: distance(word, $0)) }
        if let best = scored.min(by: { $0.distance < $1.distance }), best.distance <= limit {
            return best.candidate
        }
        let extensions = candidates.filter { $0.hasPrefix(word) }
        return word.count >= 3 && extensions.count == 1 ? extensions[0] : nil
    }

    /// Optimal-string-alignment distance: insertions, deletions, substitutions and adjacent swaps.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            previous2 = previous
            previous = current
        }
        return previous[b.count]
    }
}
