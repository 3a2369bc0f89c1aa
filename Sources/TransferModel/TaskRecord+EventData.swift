extension TaskRecord {
    /// The data of an event of `type` about this task, when that data is one of the task's own
    /// members: `task.completed` carries the task, `task.finished_downloading` its `result`,
    /// `task.response_received` its `response`; nil for other types. A store may keep such an
    /// event as a reference to the task and rebuild its data with this, as long as the task's row
    /// still is what it was when the event happened.
    package func eventData(_ type: EventType) -> [UInt8]? {
        switch type {
        case .taskCompleted: jsonBytes()
        case .taskFinishedDownloading: result?.jsonBytes()
        case .taskResponseReceived: response?.jsonBytes()
        default: nil
        }
    }
}
