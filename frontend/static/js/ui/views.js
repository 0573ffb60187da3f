// The page's view, explore or compare, and projection, a flag over either (compare stays
// projected): the panels shown, the switches' pressed state, the URL, and the session told
// when the view changes how many engines it runs.

import { forgetSizes } from "../render/size.js";
import { markDirty } from "../state/store.js";
import { changesEngines } from "./compare_mode.js";
import { applyProjection, watchProjectedBoxes } from "./projection.js";

/** `views()`: the explore and compare views built so far ({explore, compare}, either null);
 * `updateUrl()`: ui/playback.js's; `onEngines()`: the view changed the number of engines. */
export function createViews({ doc, scenario, store, views, updateUrl, onEngines }) {
  const $ = (id) => doc.getElementById(id);

  function setProjection(on) {
    scenario.projection = on;
    applyProjection(doc, on);
    forgetSizes();
    const { explore, compare, fleet } = views();
    explore?.setDark(on);
    compare?.setDark(on);
    fleet?.setDark(on);
    updateUrl();
    markDirty(store, "all");
  }

  /** `reconfigure` false: the session's init switched the view, the session runs it already. */
  function setView(view, { reconfigure = true } = {}) {
    if (view === "projection") return setProjection(!scenario.projection);
    const old = scenario.view;
    scenario.view = view;
    $("explore").hidden = view === "compare";
    $("compare").hidden = view !== "compare";
    for (const b of doc.querySelectorAll("[data-view]:not([data-view=projection])")) b.setAttribute("aria-pressed", String(b.dataset.view === view));
    forgetSizes();
    updateUrl();
    if (reconfigure && changesEngines(old, view)) onEngines();
    markDirty(store, "all");
  }

  // projected views are sized to their box: the window less the rows above and below
  function onResize() {
    forgetSizes();
    if (scenario.projection) setProjection(true);
    markDirty(store, "all");
  }
  watchProjectedBoxes(doc, onResize);

  return { setProjection, setView, onResize };
}
