// A student's tick in class mode (ui.classroom): every `every` milliseconds the browser tells
// the server "tick" (a trigger of this component), and the server's callback looks at the class;
// only when the teacher moved or revealed does it rerun the fragment that holds the step.
// Nothing is drawn. One timer per element, started the first time Streamlit draws it, kept
// through later runs (each gives the latest way to send), stopped when the element has left
// the page. The ticks are numbered for the page's lifetime (each one a new value).
const ticks = new WeakMap();
let count = 0;

export default function ({data, parentElement, setTriggerValue}) {
  const every = Math.max(250, Number(data && data.every) || 1000);
  let tick = ticks.get(parentElement);
  if (tick && tick.every !== every) {
    clearInterval(tick.timer);
    tick = null;
  }
  if (!tick) {
    tick = {every, send: setTriggerValue, timer: null};
    const mine = tick;
    mine.timer = setInterval(() => {
      if (!parentElement.isConnected) {
        clearInterval(mine.timer);
        if (ticks.get(parentElement) === mine) ticks.delete(parentElement);
        return;
      }
      mine.send("tick", ++count);
    }, every);
    ticks.set(parentElement, tick);
  }
  tick.send = setTriggerValue;
}
