// The model and GPU catalogs over REST (GET /api/models, /api/gpus): {models, gpus}, each a list
// as the server gives it; an Error naming the URL when either request fails.

async function getJson(url, fetchFn) {
  const res = await fetchFn(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.json();
}

export async function fetchCatalog(fetchFn = fetch) {
  const [models, gpus] = await Promise.all([getJson("/api/models", fetchFn), getJson("/api/gpus", fetchFn)]);
  return { models, gpus };
}
