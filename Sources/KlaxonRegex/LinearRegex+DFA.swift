/// A lazily built DFA over a `Program`, shared by every match of that program.
///
/// Why: the Pike VM costs (live counters) per scalar, so a wide pattern (`(a|a|…|a)*`, 6,000
/// instructions) costs millions of steps per label value, and a dispatcher pass matches thousands of
/// alerts. A DFA state is the closed set of counters the VM would hold; once a state's transition on a
/// scalar is known, the next value pays one lookup for it. States are made on demand (each costs one
/// VM step) and the cache is bounded: when full it is emptied, and a match that fills it twice
/// finishes on the VM from where it stands, so the work bound of the VM still holds. A program whose
/// states keep overflowing the cache (an exponential DFA: `(a|b)*a(a|b){20}`) gives the DFA up for good:
/// building states it cannot keep would cost more than the VM.
///
/// Only for programs whose assertions are `\A`/`^` and `\z`/`$` (text anchors): a state's closure is
/// then computed as if the text goes on, and whether it accepts at the end is asked only at the end.
struct LazyDFA {
    struct State {
        /// The closed set of counters, sorted: the state's identity.
        var visited: [Int32]
        /// The consuming instructions among them.
        var consuming: [Int32]
        /// Whether the text may end here (computed on first need).
        var acceptsAtEnd: Bool?
        var next: [UInt32: Int32] = [:]
    }

    enum Outcome {
        /// The DFA was given up for this program: match on the VM (nothing was read).
        case unavailable
        case decided(Bool)
        /// Gave up before scalar `at` (already taken from the iterator); `visited` is the VM's set there.
        case resume(visited: [Int32], at: UInt32, prev: UInt32?)
        /// The work went over `limit` before the match was decided.
        case exceeded
    }

    static let maxStates = 256
    static let maxTransitions = 8192
    /// Flushes after which the DFA is given up for the program.
    static let maxFlushes = 8

    /// Counters stored across all states: a few times the program, so a wide program keeps a few states.
    let counterBudget: Int
    var states: [State] = []
    var index: [[Int32]: Int32] = [:]
    var start: Int32?
    var counters = 0
    var transitions = 0
    var flushes = 0
    var disabled = false

    init(instructions: Int) {
        counterBudget = max(16_384, 4 * instructions)
    }

    mutating func flush() {
        flushes += 1
        if flushes >= Self.maxFlushes { disabled = true }
        states.removeAll(keepingCapacity: !disabled)
        index.removeAll(keepingCapacity: !disabled)
        start = nil
        counters = 0
        transitions = 0
    }

    /// The state for a closed set (the start state is keyed apart: its closure saw no previous scalar);
    /// nil if the cache has no room.
    mutating func intern(_ visited: [Int32], isStart: Bool, program: Program) -> Int32? {
        let key = isStart ? visited + [-1] : visited
        if let id = index[key] { return id }
        guard states.count < Self.maxStates, counters + visited.count <= counterBudget else { return nil }
        let consuming = visited.filter { pc in
            switch program.insts[Int(pc)] {
            case .char, .fold, .set, .any, .anyNotNewline: return true
            default: return false
            }
        }
        states.append(State(visited: visited, consuming: consuming, acceptsAtEnd: nil))
        counters += visited.count
        let id = Int32(states.count - 1)
        index[key] = id
        return id
    }

    /// The closed set reached from `seeds`, computed as if more text follows.
    static func closure(
        _ seeds: [Int32], prev: UInt32?, program: Program, set: inout Program.PCSet, stack: inout [Int32],
        steps: inout Int
    ) -> [Int32] {
        set.count = 0
        for pc in seeds { program.addThread(&set, pc, prev: prev, next: 0, stack: &stack, steps: &steps) }
        return Array(set.dense[0..<set.count]).sorted()
    }

    mutating func run(
        _ scalars: inout String.UnicodeScalarView.Iterator, program: Program, steps: inout Int, limit: Int = .max
    ) -> Outcome {
        if disabled { return .unavailable }
        // Made on the first miss: a match that only follows known transitions allocates nothing.
        var set: Program.PCSet?
        var stack: [Int32] = []
        var flushedHere = false
        var c = scalars.next()?.value
        var state: Int32
        if let s = start {
            state = s
        } else {
            set = Program.PCSet(program.insts.count)
            let visited = Self.closure([0], prev: nil, program: program, set: &set!, stack: &stack, steps: &steps)
            if intern(visited, isStart: true, program: program) == nil { flush() }
            guard let s = intern(visited, isStart: true, program: program) else {
                guard let c else { return .decided(accepts(visited, program, prev: nil, steps: &steps)) }
                return .resume(visited: visited, at: c, prev: nil)
            }
            start = s
            state = s
        }
        var prev: UInt32?
        while let ch = c {
            // Checked once a scalar: a scalar costs at most 2 × instructions, so the overrun is bounded.
            if steps > limit { return .exceeded }
            if let to = states[Int(state)].next[ch] {
                steps += 1
                state = to
                prev = ch
                c = scalars.next()?.value
                continue
            }
            let from = states[Int(state)]
            if from.consuming.isEmpty { return .decided(false) }
            var foldKey: UInt32?
            var seeds: [Int32] = []
            for pc in from.consuming {
                steps += 1
                if program.consumes(pc, ch, &foldKey) { seeds.append(pc + 1) }
            }
            if set == nil { set = Program.PCSet(program.insts.count) }
            let visited = Self.closure(seeds, prev: ch, program: program, set: &set!, stack: &stack, steps: &steps)
            var to = transitions < Self.maxTransitions ? intern(visited, isStart: false, program: program) : nil
            if to == nil, !flushedHere, !disabled {
                // Full: empty the cache once per match and carry on from here.
                flushedHere = true
                flush()
                if let f = intern(from.visited, isStart: false, program: program),
                    let t = intern(visited, isStart: false, program: program)
                {
                    state = f
                    to = t
                }
            }
            guard let to else {
                // Full again: finish on the VM from the set just computed (no step is done twice).
                let after = scalars.next()?.value
                guard let after else { return .decided(accepts(visited, program, prev: ch, steps: &steps)) }
                return .resume(visited: visited, at: after, prev: ch)
            }
            states[Int(state)].next[ch] = to
            transitions += 1
            state = to
            prev = ch
            c = scalars.next()?.value
        }
        if let known = states[Int(state)].acceptsAtEnd { return .decided(known) }
        let hit = accepts(states[Int(state)].visited, program, prev: prev, steps: &steps)
        states[Int(state)].acceptsAtEnd = hit
        return .decided(hit)
    }

    /// Whether the match instruction is reachable from `visited` when the text ends here.
    func accepts(_ visited: [Int32], _ program: Program, prev: UInt32?, steps: inout Int) -> Bool {
        var set = Program.PCSet(program.insts.count)
        var stack: [Int32] = []
        for pc in visited { program.addThread(&set, pc, prev: prev, next: nil, stack: &stack, steps: &steps) }
        return set.contains(Int32(program.insts.count - 1))
    }
}
