/** Files imported `with { type: "file" }`: their path (in the executable's own file system once compiled). */
declare module "redoc/bundles/redoc.standalone.js" {
  const path: string;
  export default path;
}
