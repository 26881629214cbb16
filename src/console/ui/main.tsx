import { render } from "preact";
import { App } from "./app";
import { applyTheme } from "./lib/theme";

// Before the first paint of the app, so a dark-mode reader never sees it light.
applyTheme();
render(<App />, document.getElementById("app")!);
