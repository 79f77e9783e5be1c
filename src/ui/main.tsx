// The dashboard's entry: Vera's own web UI, served by every member at /ui.
import { render } from 'preact';
import 'uplot/dist/uPlot.min.css';
import { App } from './app.js';

const root = document.getElementById('app')!;
root.textContent = ''; // the "Loading" placeholder of index.html
render(<App />, root);
