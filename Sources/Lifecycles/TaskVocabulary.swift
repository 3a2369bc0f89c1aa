/// The words a task's lifecycle is told in, spelled as the API spells them (raw values), so the
/// API model can take them over from here.

/// URLSession's four task states.
public enum TaskState: String, Sendable, CaseIterable {
    case suspended, running, canceling, completed
}

/// Finer than the state: where a task is.
public enum TaskPhase: String, Sendable, CaseIterable {
    case waiting, scheduled, connecting, transferring, retrying, finished
}

/// How a session keeps its tasks: what a restart of the process does to them.
public enum SessionMode: String, Sendable, CaseIterable {
    /// Everything durable; running tasks continue after a restart.
    case background
    /// Tasks do not outlive the process: an unfinished one completes `interrupted` at the next start.
    case `default`
    /// Nothing on disk: its tasks vanish with the process.
    case ephemeral
}
