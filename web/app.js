// Placeholder of the dashboard's script (the page is built on branch
// dash-web): shows the fleet's GPU count so the embedding can be seen.
"use strict";
fetch("api/v1/fleet/gpus").then((r) => r.json()).then((j) => {
  document.getElementById("app").textContent = `${j.data.gpus.length} GPUs`;
}).catch(() => {});
