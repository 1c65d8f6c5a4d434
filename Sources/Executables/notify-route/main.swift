import NotifyRouteCLI

// No network code: a command that needs a network sink runs notify-route-network instead.
NotifyRouteMain.main(network: .handOff(executable: "notify-route-network"))
