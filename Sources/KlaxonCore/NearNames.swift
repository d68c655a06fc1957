/// Known names close to one that was typed, for "did you mean" lists: a silence for a rule or a
/// station that nothing knows is added with a warning that lists these.
///
/// A known name is near when it is a few edits away (Levenshtein with adjacent swaps, at most a third of the longer
/// name and at least 2), when one name contains the other, or when both start with the same three
/// characters. Case is ignored. Names are cut to `maxLength` characters before they are compared, so
/// one comparison is at most `maxLength`² steps whatever a request holds.
public enum NearNames {
    /// The most characters (Unicode scalars) of a name that are compared.
    public static let maxLength = 64
    /// The most near names listed.
    public static let maxListed = 5
    /// The shortest shared start, or contained name, that makes a name near.
    static let minShared = 3

    /// The known names near `name`, closest first (fewest edits, then by name), at most `limit`.
    /// `name` itself is never listed.
    public static func near(_ name: String, among known: some Sequence<String>, limit: Int = maxListed) -> [String] {
        guard limit > 0 else { return [] }
        let typed = scalars(name)
        var seen: Set<String> = []
        var hits: [(distance: Int, name: String)] = []
        for candidate in known where candidate != name && seen.insert(candidate).inserted {
            let other = scalars(candidate)
            let longer = max(typed.count, other.count)
            let close = max(2, longer / 3)
            if let d = distance(typed, other, bound: close) {
                hits.append((d, candidate))
            } else if shares(typed, other) {
                hits.append((distance(typed, other, bound: maxLength) ?? maxLength, candidate))
            }
        }
        hits.sort { ($0.distance, $0.name) < ($1.distance, $1.name) }
        return hits.prefix(limit).map(\.name)
    }

    /// The Levenshtein distance between `a` and `b` (case ignored, each cut to `maxLength`
    /// characters), or nil when it is over `bound`.
    public static func distance(_ a: String, _ b: String, bound: Int = maxLength) -> Int? {
        distance(scalars(a), scalars(b), bound: bound)
    }

    /// A name as compared: lower-cased, at most `maxLength` scalars.
    static func scalars(_ s: String) -> [Unicode.Scalar] {
        var out: [Unicode.Scalar] = []
        out.reserveCapacity(maxLength)
        for c in s.unicodeScalars.prefix(maxLength) {
            if c.isASCII {
                out.append(("A"..."Z").contains(c) ? Unicode.Scalar(UInt8(c.value + 32)) : c)
                continue
            }
            // Per scalar, so a scalar that lower-cases to several stays one character of the bound.
            let lower = c.properties.lowercaseMapping.unicodeScalars
            if lower.count == 1, let l = lower.first { out.append(l) } else { out.append(c) }
        }
        return out
    }

    /// Whether one name contains the other, or both start alike, over at least `minShared` characters.
    static func shares(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Bool {
        let (short, long) = a.count <= b.count ? (a, b) : (b, a)
        guard short.count >= minShared else { return false }
        if zip(a, b).prefix(minShared).allSatisfy({ $0 == $1 }) { return true }
        for start in 0...(long.count - short.count) where long[start] == short[0] {
            if long[start..<(start + short.count)].elementsEqual(short) { return true }
        }
        return false
    }

    /// The optimal-string-alignment distance (Levenshtein plus the swap of two adjacent characters as
    /// one edit, so `vaule` is one edit from `value`), three rows of the table at a time, stopping as
    /// soon as every entry of a row is over `bound`. Stopping stays exact: a row's smallest entry is at
    /// most one more than the row before's, so a row over `bound` means every later one is too.
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar], bound: Int) -> Int? {
        guard abs(a.count - b.count) <= bound else { return nil }
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var before = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var row = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            row[0] = i
            var smallest = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                var d = min(previous[j] + 1, row[j - 1] + 1, substitution)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d = min(d, before[j - 2] + 1) }
                row[j] = d
                smallest = min(smallest, d)
            }
            if smallest > bound { return nil }
            (before, previous, row) = (previous, row, before)
        }
        return previous[b.count] <= bound ? previous[b.count] : nil
    }
}
