/// A number that names one thing inside a state machine (a transfer, a caller, a job, a subscriber), typed by what it
/// names so that two kinds cannot be mixed up, and ordered by the number: the order the things were made in.
struct StateMachineID<Kind: StateMachineIDKind>: Hashable, Comparable, CustomStringConvertible, Sendable {
    let rawValue: Int

    static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    var description: String { "\(Kind.name)#\(rawValue)" }
}

/// What a ``StateMachineID`` names, as its description says it.
protocol StateMachineIDKind {
    static var name: String { get }
}
