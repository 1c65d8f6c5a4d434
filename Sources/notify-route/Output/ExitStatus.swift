import ArgumentParser
import NotifyRoute

/// The documented exit codes (sysexits.h where one fits).
enum ExitStatus {
    static let delivered = ExitCode(0)
    static let noneDelivered = ExitCode(1)
    static let usage = ExitCode(64)
    static let badEventData = ExitCode(65)
    static let noSinkAvailable = ExitCode(69)
    static let configError = ExitCode(78)

    static func forReport(_ report: DeliveryReport) -> ExitCode {
        switch report.summary {
        case .delivered, .suppressed, .planned: delivered
        case .noSinkAvailable: noSinkAvailable
        case .failed: noneDelivered
        }
    }
}
