// Merged into @jupyterlab/builder's webpack config (package.json: jupyterlab.webpackConfig).
//
// Webpack's default "deterministic" module ids hash each module's identifier, and the
// module-federation container entry's identifier holds the absolute paths of the
// exposed modules: the remote entry then differs with the checkout folder. "natural"
// ids number modules in module-graph order, which no path enters, so a rebuild from
// any folder is byte-identical to the committed jaxscope/labextension/.
module.exports = {
  optimization: { moduleIds: "natural" },
};
