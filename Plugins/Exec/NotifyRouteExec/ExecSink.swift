// The exec sink plugin (issue 7) lands here: external sinks speaking JSON lines.
import NotifyRoute
