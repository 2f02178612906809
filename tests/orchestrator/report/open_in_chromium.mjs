// Opens an HTML file in headless Chromium through the DevTools protocol over
// --remote-debugging-pipe (fd 3: to the browser, fd 4: from it; messages end in NUL),
// and prints one JSON object: every console error, uncaught exception and log
// error, every network request other than the page itself, the count of elements
// matching each selector given, and where the full-page screenshot went.
// Usage: node open_in_chromium.mjs PAGE.html SHOT.png SELECTOR...
// CHROMIUM names the browser (default: chromium); SHOT_HEIGHT cuts the screenshot to
// the page's top that many CSS pixels (the README's picture).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [page, shot, ...selectors] = process.argv.slice(2);
if (!page || !shot) {
  console.error('usage: node open_in_chromium.mjs PAGE.html SHOT.png SELECTOR...');
  process.exit(2);
}
const pageUrl = pathToFileURL(page).href;
const browser = spawn(process.env.CHROMIUM || 'chromium',
  ['--headless=new', '--remote-debugging-pipe', '--no-sandbox', '--disable-gpu', '--no-first-run',
   '--no-default-browser-check', '--disable-extensions', '--disable-background-networking',
   '--disable-component-update', '--disable-sync', '--metrics-recording-only', '--mute-audio',
   '--user-data-dir=' + (process.env.CHROMIUM_PROFILE || '/tmp/ferry-chromium-' + process.pid),
   'about:blank'],
  { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
browser.stdio[2].on('data', (d) => { stderr += d; });
const deadline = setTimeout(() => fail('timed out after 60 s'), 60000);
function fail(why) {
  console.error('open_in_chromium: ' + why + '\n' + stderr.slice(-4000));
  browser.kill('SIGKILL');
  process.exit(1);
}
browser.on('error', (e) => fail('cannot start chromium: ' + e.message));
browser.on('exit', (code, sig) => { if (!finished) fail(`chromium exited (${code ?? sig})`); });

let nextId = 1, finished = false, buffered = '';
const pending = new Map(), listeners = [];
function send(method, params = {}, sessionId) {
  const id = nextId++;
  const msg = { id, method, params };
  if (sessionId) msg.sessionId = sessionId;
  browser.stdio[3].write(JSON.stringify(msg) + '\0');
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
}
browser.stdio[4].on('data', (chunk) => {
  buffered += chunk.toString('utf8');
  let end;
  while ((end = buffered.indexOf('\0')) >= 0) {
    const msg = JSON.parse(buffered.slice(0, end));
    buffered = buffered.slice(end + 1);
    if (msg.id && pending.has(msg.id)) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      if (msg.error) p.reject(new Error(p.method + ': ' + msg.error.message)); else p.resolve(msg.result);
    } else if (msg.method) {
      for (const l of listeners) l(msg);
    }
  }
});

const errors = [], requests = [];
let loaded;
const loadedPromise = new Promise((r) => { loaded = r; });
listeners.push((m) => {
  const p = m.params || {};
  if (m.method === 'Runtime.consoleAPICalled' && (p.type === 'error' || p.type === 'assert')) {
    errors.push('console.' + p.type + ': ' + (p.args || []).map((a) => a.value ?? a.description).join(' '));
  } else if (m.method === 'Runtime.exceptionThrown') {
    errors.push('exception: ' + (p.exceptionDetails?.exception?.description || p.exceptionDetails?.text));
  } else if (m.method === 'Log.entryAdded' && p.entry.level === 'error') {
    errors.push('log: ' + p.entry.text + (p.entry.url ? ' (' + p.entry.url + ')' : ''));
  } else if (m.method === 'Network.requestWillBeSent' && p.request.url !== pageUrl) {
    requests.push(p.request.url);
  } else if (m.method === 'Page.loadEventFired') {
    loaded();
  }
});

try {
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  for (const domain of ['Runtime', 'Log', 'Network', 'Page']) await send(domain + '.enable', {}, sessionId);
  await send('Emulation.setDeviceMetricsOverride', { width: 1100, height: 900, deviceScaleFactor: 1, mobile: false }, sessionId);
  await send('Page.navigate', { url: pageUrl }, sessionId);
  await loadedPromise;
  const expr = `(${JSON.stringify(selectors)}).map((s) => document.querySelectorAll(s).length)`;
  const { result } = await send('Runtime.evaluate', { expression: expr, returnByValue: true }, sessionId);
  const counts = Object.fromEntries(selectors.map((s, i) => [s, result.value[i]]));
  const metrics = await send('Page.getLayoutMetrics', {}, sessionId);
  const size = metrics.cssContentSize || metrics.contentSize;
  const { data } = await send('Page.captureScreenshot', {
    format: 'png', captureBeyondViewport: true,
    clip: { x: 0, y: 0, width: size.width, height: Math.min(size.height, Number(process.env.SHOT_HEIGHT) || Infinity),
            scale: 1 } }, sessionId);
  writeFileSync(shot, Buffer.from(data, 'base64'));
  finished = true;
  clearTimeout(deadline);
  console.log(JSON.stringify({ errors, requests, counts, screenshot: shot, title: await send('Runtime.evaluate',
    { expression: 'document.title', returnByValue: true }, sessionId).then((r) => r.result.value) }));
  await send('Browser.close').catch(() => {});
  browser.kill('SIGTERM');
  process.exit(0);
} catch (e) {
  fail(e.message);
}
