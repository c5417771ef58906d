// ESLint's settings for attnviz's browser files (attnviz/ui/components/*/*.js and the exported
// page's script, attnviz/export/page/page.js), run by
// `make lint` (npm ci installs the versions package-lock.json names).
import js from "@eslint/js";
import globals from "globals";

export default [
  js.configs.recommended,
  {
    files: ["attnviz/ui/components/**/*.js"],
    languageOptions: {ecmaVersion: 2022, globals: {...globals.browser}},
    rules: {
      "eqeqeq": "error",
      "no-var": "error",
      "prefer-const": "error",
    },
  },
  // Plain scripts that come before a component's module in it (their functions are its).
  {
    files: ["attnviz/ui/components/live_chart/phone_layout.js"],
    languageOptions: {sourceType: "script"},
  },
  {
    files: ["attnviz/ui/components/live_chart/live_chart.js"],
    languageOptions: {sourceType: "module"},
  },
  // The exported page's script: a plain script in any browser, beside plotly.js (window.Plotly).
  {
    files: ["attnviz/export/page/*.js"],
    languageOptions: {ecmaVersion: 5, sourceType: "script",
                      globals: {...globals.browser, Plotly: "readonly"}},
    rules: {"eqeqeq": "error"},
  },
];
