// What the bundler's text loader gives for an imported page (package.json's
// build: `--loader:.html=text`).
declare module "*.html" {
  const text: string;
  export default text;
}
