// The swift-log bridge (issue 7) lands here.
import NotifyRoute
