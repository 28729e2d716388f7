// The model spec: what the two old languages accepted still parses, every model formats to a
// spec that parses back to it, and every error names the spec and the part.
#include <gtest/gtest.h>

#include "model/spec.h"
#include "model/zoo.h"

namespace poseidon::model {
namespace {

Model parsed(std::string_view spec) {
  auto model = parseModelSpec(spec);
  EXPECT_TRUE(model.isOk()) << spec << ": " << model.status().toString();
  return model.isOk() ? std::move(model).value() : Model();
}

// format(parse(s)) parses to the same model.
void expectRoundTrip(std::string_view spec) {
  const Model model = parsed(spec);
  const std::string formatted = formatModelSpec(model);
  EXPECT_EQ(parsed(formatted), model) << spec << " -> " << formatted;
}

TEST(ModelSpec, ThePsLanguage) {
  EXPECT_EQ(parsed("vgg19"), vgg19());
  EXPECT_EQ(parsed("vgg19").tensors().size(), 38u);
  EXPECT_EQ(parsed("vgg19-22k").tensors().back().floats, 21841u);
  const Model uniform = parsed("uniform:25x1048576");
  ASSERT_EQ(uniform.tensors().size(), 25u);
  EXPECT_EQ(uniform.tensors()[24], (Tensor{"t24", 1048576, {1048576}}));
  EXPECT_EQ(uniform.layers()[3].kind(), LayerKind::kOther);
  const Model list = parsed("tensors:a=3,b=4");
  ASSERT_EQ(list.tensors().size(), 2u);
  EXPECT_EQ(list.tensors()[1].name, "b");  // named as written: checkpoints of such models still match
  EXPECT_EQ(list.tensors()[1].floats, 4u);
  EXPECT_EQ(list.name(), "custom");
  EXPECT_EQ(list.batch(), 1u);
}

TEST(ModelSpec, TheHybCommLanguage) {
  const Model model = parsed("fc:fc6=1024x6272,fc7=1024x1024,fc8=5460x1024");
  ASSERT_EQ(model.layers().size(), 3u);
  EXPECT_EQ(model.layers()[2].fc(), (FcShape{5460, 1024, false}));  // no bias unless marked
  EXPECT_EQ(model.layers()[2].tensors().size(), 1u);
  const Model mixed = parsed("other:conv=1000;fc:a=3x4;other:bn=7");
  ASSERT_EQ(mixed.layers().size(), 3u);
  EXPECT_EQ(mixed.layers()[0].name(), "conv");
  EXPECT_EQ(mixed.layers()[0].params(), 1000u);
  EXPECT_EQ(mixed.layers()[1].denseFloats(), 12u);
  EXPECT_EQ(mixed.layers()[2].params(), 7u);
}

TEST(ModelSpec, TheNewParts) {
  const Model model = parsed(
      "conv:c1=96x3x11x11s4@55x55+bias,c2=256x48x5x5/2@27x27;other:bn=256+256,x=u:3+v:4;fc:f=10x20+bias;"
      "batch=64;input=3x227x227");
  ASSERT_EQ(model.layers().size(), 5u);
  const ConvShape c1 = model.layers()[0].conv();
  EXPECT_EQ(c1, (ConvShape{96, 3, 11, 11, 1, 4, 55, 55, true}));
  EXPECT_EQ(model.layers()[1].conv(), (ConvShape{256, 48, 5, 5, 2, 1, 27, 27, false}));
  EXPECT_EQ(model.layers()[2].tensors()[1], (Tensor{"bn.bias", 256, {256}}));
  EXPECT_EQ(model.layers()[3].tensors()[0].name, "u");
  EXPECT_EQ(model.layers()[4].fc(), (FcShape{10, 20, true}));
  EXPECT_EQ(model.batch(), 64u);
  EXPECT_EQ(model.input(), (InputShape{3, 227, 227}));
  EXPECT_EQ(parsed("resnet50;batch=8").batch(), 8u);
  EXPECT_EQ(parsed("resnet50;batch=8").layers(), resnet50().layers());
  EXPECT_EQ(layerSpecItem(model.layers()[0]), "conv:c1=96x3x11x11s4@55x55+bias");
}

TEST(ModelSpec, RoundTrips) {
  for (const char* spec : {"uniform:3x5", "tensors:a=3,b=4", "fc:a=3x4;other:b=7;fc:c=2x2+bias,d=1x1",
                           "conv:c=8x4x3x1/2s2@7x9+bias;other:bn=8+8,x=u:1+v:2+w:3;batch=5;input=4x9x9", "vgg19",
                           "vgg19;batch=7;input=3x32x32", "inception-v3-noaux"}) {
    expectRoundTrip(spec);
  }
  EXPECT_EQ(formatModelSpec(parsed("tensors:a=3,b=4")), "other:a=3,b=4");
  EXPECT_EQ(formatModelSpec(parsed("other:a=1;fc:b=2x3+bias,c=4x5;other:d=6")),
            "other:a=1;fc:b=2x3+bias,c=4x5;other:d=6");
  EXPECT_EQ(formatModelSpec(parsed("vgg19;batch=32")), "vgg19");  // the zoo's own batch
  EXPECT_EQ(formatModelSpec(parsed("vgg19;batch=7")), "vgg19;batch=7");
  // Every zoo model written out layer by layer parses back to the same layers.
  for (const std::string& name : zooNames()) {
    const Model zoo = *zooModel(name);
    const Model renamed = zoo.withName("mine");
    const std::string explicit_spec = formatModelSpec(renamed);
    EXPECT_EQ(explicit_spec.find(name + ";"), std::string::npos);
    EXPECT_EQ(parsed(explicit_spec), renamed.withName("custom")) << name;
  }
}

TEST(ModelSpec, ErrorsNameTheSpecAndThePart) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "model '': names no layer"},
      {"uniform:25", "model 'uniform:25': 'uniform:25' is not uniform:<tensors>x<floats>"},
      {"uniform:0x5", "model 'uniform:0x5': '0' is not a positive integer"},
      {"uniform:1000001x1", "model 'uniform:1000001x1': 'uniform:1000001x1' has over 10^6 tensors"},
      // No uniform: section may take the model past the cap, whatever came before it.
      {"uniform:1x1;uniform:1000000x1",
       "model 'uniform:1x1;uniform:1000000x1': 'uniform:1000000x1' takes the model over 10^6 layers (1 before it)"},
      {"tensors:a=1,b",
       "model 'tensors:a=1,b': 'b' is not <name>=<floats>, <name>=<weight>+<bias> or "
       "<name>=<tensor>:<floats>+..."},
      {"tensors:a=-1", "model 'tensors:a=-1': '-1' is not a positive integer"},
      {"other:=5", "model 'other:=5': '=5' is not <name>=<floats>"},
      {"other:a=1+2+3", "model 'other:a=1+2+3': 'a=1+2+3' is not <name>=<floats>"},
      {"other:a=1+u:2", "model 'other:a=1+u:2': 'a=1+u:2' is not <name>=<floats>"},
      {"other:b=x", "model 'other:b=x': 'x' is not a positive integer"},
      {"fc:a=3y4", "model 'fc:a=3y4': 'a=3y4' is not <name>=<M>x<N>[+bias]"},
      {"fc:a=3x0", "model 'fc:a=3x0': '0' is not a positive integer"},
      {"fc:a=3x-4", "model 'fc:a=3x-4': '-4' is not a positive integer"},
      {"fc:a=3x4+bis", "model 'fc:a=3x4+bis': '4+bis' is not a positive integer"},
      {"fc:", "model 'fc:': section 'fc:' lists no layers"},
      {"fc:a=2x2;other:a=3", "model 'fc:a=2x2;other:a=3': layer 'a' is named twice (layers 0 and 1)"},
      {"fc:a=99999999999x99999999999",
       "model 'fc:a=99999999999x99999999999': fc layer 'a': tensor 'a.weight' of 99999999999 x 99999999999 "
       "exceeds 2^53 floats"},
      {"fc:a b=1x1", "model 'fc:a b=1x1': layer 'a b' has ' ' in its name"},
      {"conv:a=1", "model 'conv:a=1': 'a=1' is not <name>=<out>x<in>x<kh>x<kw>[/<groups>][s<stride>]@<H>x<W>[+bias]"},
      {"conv:a=1x1x1@2x2", "model 'conv:a=1x1x1@2x2': 'a=1x1x1@2x2' is not <name>=<out>x<in>x<kh>x<kw>"},
      {"conv:a=1x1x1x1/0@2x2", "'0' is not a positive integer"},
      {"conv:a=3x1x1x1/2@2x2", "conv layer 'a' has 3 output channels in 2 groups"},
      {"conv:a=1x1x1x1sx@2x2", "'x' is not a positive integer"},
      {"resnet", "model 'resnet': section 'resnet' is not a zoo name (alexnet, alexnet-torchvision, vgg19"},
      {"hybrid:a=1", "section 'hybrid:a=1' is not a zoo name"},
      {"vgg19;fc:a=1x1",
       "model 'vgg19;fc:a=1x1': after zoo model 'vgg19', section 'fc:a=1x1' is not batch=K or "
       "input=CxHxW"},
      {"vgg19;batch=0", "model 'vgg19;batch=0': '0' is not a positive integer"},
      {"fc:a=1x1;input=3x4", "model 'fc:a=1x1;input=3x4': 'input=3x4' is not input=<C>x<H>x<W>"},
      {"fc:a=1x1;", "model 'fc:a=1x1;': section '' is not a zoo name"},
      {"other:x=a:1+b:0", "'0' is not a positive integer"},
      {"other:x=a:1+a:2", "model 'other:x=a:1+a:2': tensor 'a' of layer 'x' is named as one of layer 'x'"},
  };
  for (const auto& [spec, expected] : cases) {
    auto model = parseModelSpec(spec);
    ASSERT_FALSE(model.isOk()) << spec;
    EXPECT_NE(model.status().message().find(expected), std::string::npos)
        << "expected '" << expected << "' in: " << model.status().message();
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace poseidon::model
