// A student's tick in class mode (ui.classroom): every `every` milliseconds the browser tells
// the server "tick" (a trigger of this component), and the server's callback looks at the class;
// only when the teacher moved or revealed does it rerun the fragment that holds the step.
// Nothing is drawn. One timer per element: Streamlit calls this on every run that draws the
// element, and the timer is set again each time, and stopped on unmount. The ticks are
// numbered for the page's lifetime (each one a new value).
const timers = new Map();
let count = 0;

export default function ({data, parentElement, setTriggerValue}) {
  const every = Math.max(250, Number(data && data.every) || 1000);
  const old = timers.get(parentElement);
  if (old) clearInterval(old.timer);
  const tick = {timer: setInterval(() => setTriggerValue("tick", ++count), every)};
  timers.set(parentElement, tick);
  return () => {
    clearInterval(tick.timer);
    if (timers.get(parentElement) === tick) timers.delete(parentElement);
  };
}
