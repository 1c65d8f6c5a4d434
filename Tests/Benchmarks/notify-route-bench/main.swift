// MARK: Main

let arguments = CommandLine.arguments.dropFirst()
if arguments.first == "serve", let socket = arguments.dropFirst().first {
    await benchServe(socket: socket)
}
guard let name = arguments.first, let count = arguments.dropFirst().first.flatMap({ Int($0) }), count > 0 else {
    fail("usage: notify-route-bench route|floor|memory|journal|storm|state COUNT, or serve SOCKET")
}
switch name {
case "route": await benchRoute(events: count)
case "floor": await benchFloor(events: count)
case "memory": await benchMemory(keys: count)
case "journal": await benchJournal(records: count)
case "storm": await benchStorm(events: count)
case "state": await benchState(events: count)
default: fail("unknown benchmark \(name)")
}
